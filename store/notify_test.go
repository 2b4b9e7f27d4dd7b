package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestRouter(t *testing.T) {
	ctx := t.Context()
	if _, err := storetest.Open(t, store.DialectSQLite).NewRouter(ctx, nil); !errors.Is(err, store.ErrNoNotify) {
		t.Fatalf("sqlite router: %v", err)
	}
	s1 := storetest.Open(t, store.DialectPostgres)
	s2 := storetest.Open(t, store.DialectPostgres) // another schema of the same database
	r1, err := s1.NewRouter(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := s2.NewRouter(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()

	got1, got2 := make(chan string, 4), make(chan string, 4)
	lctx, stop := context.WithCancel(ctx)
	if err := r1.Listen(lctx, "replica:a", func(p []byte) { got1 <- string(p) }); err != nil {
		t.Fatal(err)
	}
	if err := r2.Listen(ctx, "replica:a", func(p []byte) { got2 <- string(p) }); err != nil {
		t.Fatal(err)
	}
	if err := r1.Listen(ctx, "replica:a", func([]byte) {}); err == nil {
		t.Error("second handler on one channel accepted")
	}
	if err := r1.Publish(ctx, "replica:a", []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-got1:
		if p != `{"x":1}` {
			t.Errorf("payload %q", p)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("notification not delivered")
	}
	select {
	case p := <-got2:
		t.Errorf("another schema heard %q", p)
	case <-time.After(200 * time.Millisecond):
	}
	if err := r1.Publish(ctx, "replica:a", []byte(strings.Repeat("x", 8000))); !errors.Is(err, store.ErrPayloadTooLarge) {
		t.Errorf("8000 bytes: %v", err)
	}
	stop()
	time.Sleep(100 * time.Millisecond)
	_ = r1.Publish(ctx, "replica:a", []byte(`late`))
	select {
	case p := <-got1:
		t.Errorf("heard %q after its listen ended", p)
	case <-time.After(200 * time.Millisecond):
	}

	// RunOwner reads the runs table.
	if err := s1.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "fake"}); err != nil {
		t.Fatal(err)
	}
	if id, owner, err := r1.RunOwner(ctx, "c1"); err != nil || id != "" || owner != "" {
		t.Errorf("idle chat: %q %q %v", id, owner, err)
	}
	if err := s1.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1", Owner: "replica-a"}); err != nil {
		t.Fatal(err)
	}
	if id, owner, err := r1.RunOwner(ctx, "c1"); err != nil || id != "r1" || owner != "replica-a" {
		t.Errorf("running chat: %q %q %v", id, owner, err)
	}
}
