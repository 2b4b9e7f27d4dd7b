package dendritetest_test

import (
	"database/sql"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
)

func TestServer(t *testing.T) {
	t.Parallel()
	s := dendritetest.Start(t, dendritetest.Options{})
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	if host, _, _ := net.SplitHostPort(u.Host); host != "127.0.0.1" {
		t.Fatalf("server bound to %s, want loopback", u.Host)
	}
	cfg, err := os.ReadFile(filepath.Join(s.Dir, "dendrite.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"disable_federation: true", "registration_shared_secret: " + dendritetest.SharedSecret, "key_perspectives: []"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config lacks %q", want)
		}
	}

	alice := s.Register(t, "alice")
	bob := s.Register(t, "bob")
	if alice.ID == bob.ID || !strings.HasSuffix(string(alice.ID), ":"+dendritetest.ServerName) {
		t.Fatalf("users %s %s", alice.ID, bob.ID)
	}
	ac := s.Login(t, alice, "ALICEDEV")
	bc := s.Login(t, bob, "BOBDEV")
	who, err := ac.Whoami(t.Context())
	if err != nil || who.DeviceID != "ALICEDEV" {
		t.Fatalf("whoami %+v %v", who, err)
	}
	room, err := ac.CreateRoom(t.Context(), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{bob.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bc.JoinRoomByID(t.Context(), room.RoomID); err != nil {
		t.Fatal(err)
	}
	sent, err := ac.SendText(t.Context(), room.RoomID, "hello")
	if err != nil {
		t.Fatal(err)
	}
	// Dendrite persists a sent event asynchronously (through its JetStream), so
	// another member may get M_NOT_FOUND for a moment: wait for it.
	var ev *event.Event
	for deadline := time.Now().Add(30 * time.Second); ; {
		ev, err = bc.GetEvent(t.Context(), room.RoomID, sent.EventID)
		if err == nil || !errors.Is(err, mautrix.MNotFound) || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Content.ParseRaw(event.EventMessage); err != nil || ev.Content.AsMessage().Body != "hello" {
		t.Fatalf("bob sees %+v (%v)", ev.Content.Raw, err)
	}

	// Open registration stays refused: only the shared secret registers.
	if _, _, err := ac.Register(t.Context(), &mautrix.ReqRegister[any]{Username: "mallory", Password: "x"}); err == nil {
		t.Fatal("open registration succeeded")
	}

	// Dendrite kept its databases in WAL mode (readers do not hold off its
	// writers), and made its tables in them (the relay and MSC databases stay
	// empty: relays and MSCs are off).
	dbs, _ := filepath.Glob(filepath.Join(s.Dir, "data", "*.db"))
	if len(dbs) < 5 {
		t.Fatalf("databases %v", dbs)
	}
	for _, p := range dbs {
		db, err := sql.Open("sqlite", p)
		if err != nil {
			t.Fatal(err)
		}
		var mode string
		var tables int
		err = db.QueryRow("PRAGMA journal_mode").Scan(&mode)
		if err == nil {
			err = db.QueryRow("SELECT count(*) FROM sqlite_master WHERE type='table'").Scan(&tables)
		}
		_ = db.Close()
		used := !strings.Contains(p, "relayapi") && !strings.Contains(p, "mscs")
		if err != nil || mode != "wal" || used && tables == 0 {
			t.Errorf("%s: journal mode %q, %d tables (%v)", filepath.Base(p), mode, tables, err)
		}
	}

	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	ac.DefaultHTTPRetries = 0
	if _, err := ac.Whoami(t.Context()); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

func TestBinariesMissing(t *testing.T) {
	t.Setenv(dendritetest.EnvBin, t.TempDir())
	if _, err := dendritetest.Binaries(); !errors.Is(err, dendritetest.ErrNotInstalled) {
		t.Fatalf("Binaries() = %v, want ErrNotInstalled", err)
	}
}
