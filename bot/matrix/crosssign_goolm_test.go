//go:build goolm

package matrix_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
)

// startCrossSigned starts the bot with encryption and its recovery key in
// keyFile (the harness's startBot with Config.RecoveryKeyFile).
func (w *world) startCrossSigned(keyFile string) {
	t := w.t
	t.Helper()
	w.threads = chatops.NewDesk(w.core, chatstore.Store{St: w.st}, w.policy, chatops.DeskOptions{
		DefaultAgent: "fake", Workdir: t.TempDir(), Budget: chatops.Budget{MinInterval: minInterval},
	}, w.log)
	bot, err := matrix.New(matrix.Config{
		Homeserver: w.hs.URL, UserID: string(w.botUser.ID), Password: w.botUser.Password,
		Encryption: true, CryptoDB: w.st.DB().DB, CryptoDialect: w.dialect, RecoveryKeyFile: keyFile,
		TypingTimeout: 3 * time.Second,
	}, w.threads, w.st, w.st, w.log)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bot.Run(ctx) }()
	select {
	case <-bot.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("bot did not start: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("bot not ready after 60 s")
	}
	w.bot, w.stop, w.done = bot, cancel, done
	t.Cleanup(w.stopBot)
}

// crossSigning is what the homeserver publishes of u's cross-signing: the
// master key, and whether device is signed by u's self-signing key.
func crossSigning(t *testing.T, cli *mautrix.Client, u id.UserID, device id.DeviceID) (master id.Ed25519, signed bool) {
	t.Helper()
	resp, err := cli.QueryKeys(t.Context(), &mautrix.ReqQueryKeys{DeviceKeys: mautrix.DeviceKeysRequest{u: mautrix.DeviceIDList{}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range resp.MasterKeys[u].Keys {
		master = k
	}
	var self id.Ed25519
	for _, k := range resp.SelfSigningKeys[u].Keys {
		self = k
	}
	dev, ok := resp.DeviceKeys[u][device]
	if self == "" || !ok {
		return master, false
	}
	_, signed = dev.Signatures[u][id.NewKeyID(id.KeyAlgorithmEd25519, self.String())]
	return master, signed
}

func machineOf(cli *mautrix.Client) *cryptohelper.CryptoHelper {
	return cli.Crypto.(*cryptohelper.CryptoHelper)
}

// TestCrossSignedOnlyClient: a client that shares its keys only with
// cross-signed devices, and checks the sender's trust, still talks with the
// bot: the bot's first start created its cross-signing keys (the recovery
// key in a 0600 file) and signed its device, so alice's mention reaches it
// and its encrypted answer comes from a cross-signed device.
func TestCrossSignedOnlyClient(t *testing.T) {
	w := newWorld(t, "sqlite")
	keyFile := filepath.Join(t.TempDir(), "state", "matrix-recovery-key")
	w.startCrossSigned(keyFile)
	st, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("recovery key file mode %v, want 0600", st.Mode().Perm())
	}
	if master, signed := crossSigning(t, w.bot.Client(), w.botUser.ID, w.bot.Client().DeviceID); master == "" || !signed {
		t.Fatalf("bot master key %q, device signed %v", master, signed)
	}
	alice := w.human(w.alice, true)
	bob := w.human(w.bob, true)
	// mautrix's "only cross-signed devices": room keys go only to devices
	// signed by their owner's cross-signing key (trusted on first use).
	for _, h := range []*human{alice, bob} {
		machineOf(h.cli).Machine().SendKeysMinTrust = id.TrustStateCrossSignedTOFU
	}
	room := w.room(alice, bob, true)
	w.prov.add(script{before: []string{"Signed answer."}}.turn)
	root := alice.say(room, "", w.botUser.Name+": hi", w.botUser.ID)
	alice.wait("the answer from a cross-signed device", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, w.botUser.ID, room, root, "Signed ans")
		return p != nil && p.Mautrix.WasEncrypted && p.Mautrix.TrustState >= id.TrustStateCrossSignedTOFU &&
			strings.Contains(current(evs, p).Body, "Done")
	})
}

// TestCrossSigningKeptAcrossRestarts: a restart loads the cross-signing keys
// from secret storage with the recovery key (same master key, same file);
// without the file the bot says so and starts, unsigned, leaving the
// account's identity and the missing file alone.
func TestCrossSigningKeptAcrossRestarts(t *testing.T) {
	w := newWorld(t, "sqlite")
	keyFile := filepath.Join(t.TempDir(), "matrix-recovery-key")
	w.startCrossSigned(keyFile)
	master, _ := crossSigning(t, w.bot.Client(), w.botUser.ID, w.bot.Client().DeviceID)
	key, err := os.ReadFile(keyFile)
	if err != nil || master == "" {
		t.Fatalf("master %q, key file: %v", master, err)
	}
	w.stopBot()

	w.startCrossSigned(keyFile)
	again, signed := crossSigning(t, w.bot.Client(), w.botUser.ID, w.bot.Client().DeviceID)
	if again != master || !signed {
		t.Errorf("after a restart: master %q (was %q), device signed %v", again, master, signed)
	}
	if k, _ := os.ReadFile(keyFile); string(k) != string(key) {
		t.Error("the recovery key file changed across a restart")
	}
	w.stopBot()

	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	w.startCrossSigned(keyFile)
	if again, _ := crossSigning(t, w.bot.Client(), w.botUser.ID, w.bot.Client().DeviceID); again != master {
		t.Errorf("without the key file: master %q, want %q kept", again, master)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Errorf("the missing key file was written again: %v", err)
	}
}
