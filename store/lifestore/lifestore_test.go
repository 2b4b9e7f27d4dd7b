package lifestore

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// TestStoreAsLifecycleStore: on a real SQLite store, an unknown run is
// lifecycle.ErrNotFound, the chat's running run is found, and a stale run
// of another owner is swept.
func TestStoreAsLifecycleStore(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenAndMigrate(ctx, filepath.Join(t.TempDir(), "tl.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := Store{St: st}
	if _, err := s.Run(ctx, "nope"); !errors.Is(err, lifecycle.ErrNotFound) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
	if err := st.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "claude"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.RunningRun(ctx, "c1"); ok || err != nil {
		t.Errorf("a chat with no run: %v %v", ok, err)
	}
	if err := st.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1", Owner: "other:1", StartedAt: time.Now().Add(-time.Hour)}); err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.RunningRun(ctx, "c1")
	if !ok || err != nil || r.ID != "r1" || r.Owner != "other:1" || r.Status != runhub.StatusRunning {
		t.Fatalf("running run = %+v %v %v", r, ok, err)
	}
	swept, err := s.MarkStaleRunsInterrupted(ctx, time.Now())
	if err != nil || len(swept) != 1 || swept[0].ID != "r1" || swept[0].ChatID != "c1" {
		t.Fatalf("swept %+v, %v", swept, err)
	}
	if r, err := s.Run(ctx, "r1"); err != nil || r.Status != runhub.StatusInterrupted {
		t.Errorf("after the sweep: %+v %v", r, err)
	}
}
