//go:build goolm

package matrix_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/event"
	_ "modernc.org/sqlite"
)

func init() {
	humanCrypto = func(t *testing.T, cli *mautrix.Client) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "human-crypto.db")
		db, err := dbutil.NewWithDialect("file:"+path+"?_txlock=immediate&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)", "sqlite")
		if err != nil {
			t.Fatal(err)
		}
		h, err := cryptohelper.NewCryptoHelper(cli, []byte("human pickle key"), db)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		cli.Crypto = h
	}
}

func TestEncryptedApprovalByReaction(t *testing.T) {
	approvalFlow(t, true)
}

// TestEncryptedRestartMidRun also shows that the keys persist: the restarted
// bot decrypts the follow-up and encrypts its answer with the device and
// sessions kept in the database.
func TestEncryptedRestartMidRun(t *testing.T) {
	restartFlow(t, true)
}

// TestEncryptedTwentyKBAnswer: in an encrypted room too a 20 KB answer is
// one message (as Megolm ciphertext within max_event_bytes).
func TestEncryptedTwentyKBAnswer(t *testing.T) {
	twentyKBFlow(t, true)
}

// TestEncryptedQuestionByPoll: the poll, the votes and the poll's end are
// encrypted like the rest of the room.
func TestEncryptedQuestionByPoll(t *testing.T) {
	pollFlow(t, true)
}

// TestEncryptedBesideAnotherMautrixSchema: another schema of the database
// with mautrix's tables (a bridge, another test) does not stop the bot's
// encryption store, which lives in Threadline's own schema.
func TestEncryptedBesideAnotherMautrixSchema(t *testing.T) {
	w := newWorld(t, "postgres")
	other := fmt.Sprintf("other_%d", time.Now().UnixNano())
	db := w.st.DB()
	for _, q := range []string{"CREATE SCHEMA " + other, "CREATE TABLE " + other + ".mx_version (version INTEGER, compat INTEGER)",
		"CREATE TABLE " + other + ".crypto_version (version INTEGER, compat INTEGER)"} {
		if _, err := db.ExecContext(t.Context(), q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _, _ = db.ExecContext(context.Background(), "DROP SCHEMA "+other+" CASCADE") })
	encryptedHello(w, "Hello beside a bridge.")
}

// encryptedHello starts the bot with encryption, and has alice mention it
// in a new encrypted room and get its answer, text, encrypted.
func encryptedHello(w *world, text string) {
	w.t.Helper()
	w.startBot(true)
	alice := w.human(w.alice, true)
	bob := w.human(w.bob, true)
	room := w.room(alice, bob, true)
	w.prov.add(script{before: []string{text}}.turn)
	root := alice.say(room, "", w.botUser.Name+": hi", w.botUser.ID)
	alice.wait("the answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, w.botUser.ID, room, root, text[:10])
		return p != nil && p.Mautrix.WasEncrypted && strings.Contains(current(evs, p).Body, "Done")
	})
}

// TestUndecryptableNotice: an encrypted event the bot cannot decrypt gets a
// notice in reply, saying so.
func TestUndecryptableNotice(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(true)
	alice := w.human(w.alice, true)
	bob := w.human(w.bob, true)
	room := w.room(alice, bob, true)
	bogus := map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAcJ8", "sender_key": "x", "session_id": "y", "device_id": "ALIDEV"}
	resp, err := alice.cli.SendMessageEvent(t.Context(), room, event.EventEncrypted, bogus, mautrix.ReqSendEvent{DontEncrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	evs := alice.wait("the notice", waitLong, func(evs []*event.Event) bool {
		return slices.ContainsFunc(evs, func(e *event.Event) bool {
			c := msgContent(e)
			return c != nil && e.Sender == w.botUser.ID && c.RelatesTo.GetReplyTo() == resp.EventID
		})
	})
	for _, e := range evs {
		if c := msgContent(e); c != nil && e.Sender == w.botUser.ID {
			if !strings.Contains(c.Body, "could not decrypt") || !e.Mautrix.WasEncrypted {
				t.Errorf("notice %q (encrypted %v)", c.Body, e.Mautrix.WasEncrypted)
			}
		}
	}
}

// TestEncryptedOnSQLite runs the encrypted flow with the keys in Threadline's
// SQLite database (one connection, shared with the store).
func TestEncryptedOnSQLite(t *testing.T) {
	encryptedHello(newWorld(t, "sqlite"), "Hello from **SQLite**.")
}

// TestEncryptedLogCommand: in an encrypted room the log is an encrypted
// m.file.
func TestEncryptedLogCommand(t *testing.T) {
	logFlow(t, true)
}

// TestEncryptedFetchThreadFile: in an encrypted room the thread's encrypted
// attachment is fetched and decrypted.
func TestEncryptedFetchThreadFile(t *testing.T) {
	threadToolsFlow(t, true)
}
