//go:build goolm

package matrix_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/crypto/ssss"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix"
)

// startCrossSigned starts the bot with encryption and its recovery key in
// keyFile (the harness's startBot with Config.RecoveryKeyFile).
func (w *world) startCrossSigned(keyFile string) {
	w.t.Helper()
	w.runBot(w.newCrossSigned(keyFile))
}

// newCrossSigned is a bot (and its desk, w.threads) with encryption and its
// recovery key in keyFile.
func (w *world) newCrossSigned(keyFile string) *matrix.Bot {
	w.t.Helper()
	w.recoveryKeyFile = keyFile
	return w.newBot(true)
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

// TestUnsignedBotExcluded is the control of TestCrossSignedOnlyClient: a bot
// without cross-signing (no recovery key file) gets no keys from a client in
// that mode, so it cannot read alice's mention, and says so.
func TestUnsignedBotExcluded(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(true)
	alice := w.human(w.alice, true)
	bob := w.human(w.bob, true)
	machineOf(alice.cli).Machine().SendKeysMinTrust = id.TrustStateCrossSignedTOFU
	room := w.room(alice, bob, true)
	root := alice.say(room, "", w.botUser.Name+": hi", w.botUser.ID)
	alice.wait("the bot's could-not-decrypt notice", waitLong, func(evs []*event.Event) bool {
		for _, e := range evs {
			if c := msgContent(e); c != nil && e.Sender == w.botUser.ID && c.RelatesTo.GetReplyTo() == root {
				return strings.Contains(c.Body, "could not decrypt")
			}
		}
		return false
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
	w.stopBot()

	// Another recovery key than the account's stops the start, and changes
	// nothing.
	other, err := ssss.NewKey("")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, []byte(other.RecoveryKey()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bot := w.newCrossSigned(keyFile)
	err = bot.Run(t.Context())
	_ = w.threads.Close()
	if !errors.Is(err, matrix.ErrCrossSigning) {
		t.Fatalf("Run with another recovery key: %v, want ErrCrossSigning", err)
	}
	if strings.Contains(err.Error(), other.RecoveryKey()) {
		t.Error("the error shows the recovery key")
	}
	if again, _ := crossSigning(t, alice(t, w), w.botUser.ID, ""); again != master {
		t.Errorf("after a wrong recovery key: master %q, want %q kept", again, master)
	}
}

// alice is a plain client of alice's, for queries.
func alice(t *testing.T, w *world) *mautrix.Client {
	return w.hs.Login(t, w.alice, "ALIQUERY")
}

// TestKeyBackupAfterLostCryptoStore: the bot uploads the room keys it gets
// and makes to the key backup; after its crypto database is lost (and with
// it the device: a new password login), the recovery key alone gives it
// back the keys of earlier messages, alice's and its own.
func TestKeyBackupAfterLostCryptoStore(t *testing.T) {
	w := newWorld(t, "sqlite")
	keyFile := filepath.Join(t.TempDir(), "matrix-recovery-key")
	w.startCrossSigned(keyFile)
	alice := w.human(w.alice, true)
	bob := w.human(w.bob, true)
	room := w.room(alice, bob, true)
	w.prov.add(script{before: []string{"Before the loss."}}.turn)
	root := alice.say(room, "", w.botUser.Name+": the earlier question", w.botUser.ID)
	evs := alice.wait("the answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, w.botUser.ID, room, root, "Before the")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	answer := postWith(evs, w.botUser.ID, room, root, "Before the").ID

	// Both sessions reach the backup.
	sessionOf := func(cli *mautrix.Client, evID id.EventID) *event.Event {
		t.Helper()
		evt, err := cli.GetEvent(t.Context(), room, evID)
		if err != nil {
			t.Fatal(err)
		}
		if err := evt.Content.ParseRaw(evt.Type); err != nil {
			t.Fatal(err)
		}
		return evt
	}
	bcli := w.bot.Client()
	want := []id.SessionID{
		sessionOf(bcli, root).Content.AsEncrypted().SessionID,
		sessionOf(bcli, answer).Content.AsEncrypted().SessionID,
	}
	deadline := time.Now().Add(waitLong)
	for {
		v, err := bcli.GetKeyBackupLatestVersion(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		keys, err := bcli.GetKeyBackup(t.Context(), v.Version)
		if err != nil {
			t.Fatal(err)
		}
		have := keys.Rooms[room].Sessions
		if _, a := have[want[0]]; a {
			if _, b := have[want[1]]; b {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s has %d sessions of the room, want %v", v.Version, len(have), want)
		}
		time.Sleep(100 * time.Millisecond)
	}
	oldDevice := bcli.DeviceID
	w.stopBot()

	// The crypto database is lost, and the login with it.
	loseCryptoStore(t, w)
	w.startCrossSigned(keyFile)
	bcli = w.bot.Client()
	if bcli.DeviceID == oldDevice {
		t.Fatalf("still device %s", oldDevice)
	}
	if _, signed := crossSigning(t, bcli, w.botUser.ID, bcli.DeviceID); !signed {
		t.Error("the new device is not cross-signed")
	}
	for evID, text := range map[id.EventID]string{root: "the earlier question", answer: "fake"} {
		dec, err := machineOf(bcli).Decrypt(t.Context(), sessionOf(bcli, evID))
		if err != nil {
			t.Fatalf("decrypt %s after the loss: %v", evID, err)
		}
		if body, _ := dec.Content.Raw["body"].(string); !strings.Contains(body, text) {
			t.Errorf("decrypted %s: %q, want %q in it", evID, body, text)
		}
	}
}

// loseCryptoStore empties the bot's crypto tables and forgets its login, as
// a bot whose database was rebuilt would start.
func loseCryptoStore(t *testing.T, w *world) {
	t.Helper()
	db := w.st.DB()
	rows, err := db.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'crypto%' AND name <> 'crypto_version'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Close(); err != nil || len(tables) == 0 {
		t.Fatalf("crypto tables %v: %v", tables, err)
	}
	// Children before parents: retry the ones a foreign key still holds.
	for pass := 0; len(tables) > 0; pass++ {
		var left []string
		for _, tb := range tables {
			if _, err := db.ExecContext(t.Context(), "DELETE FROM "+tb); err != nil {
				if pass > len(tables) {
					t.Fatalf("empty %s: %v", tb, err)
				}
				left = append(left, tb)
			}
		}
		tables = left
	}
	if err := w.st.SaveMatrixLogin(t.Context(), string(w.botUser.ID), []byte("{}")); err != nil {
		t.Fatal(err)
	}
}
