package store_test

import (
	"errors"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestAdoptAndInterruptRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		if err := s.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1", Owner: "old:1"}); err != nil {
			t.Fatal(err)
		}
		if err := s.AdoptRun(ctx, "r1", "new:2"); err != nil {
			t.Fatal(err)
		}
		if r, _ := s.GetRun(ctx, "r1"); r.Owner != "new:2" || r.Status != runhub.StatusRunning || r.HeartbeatAt.IsZero() {
			t.Fatalf("adopted run: %+v", r)
		}
		if runs, err := s.RunningRuns(ctx); err != nil || len(runs) != 1 || runs[0].ID != "r1" {
			t.Fatalf("RunningRuns = %+v, %v", runs, err)
		}
		if ok, err := s.InterruptRun(ctx, "r1", "relay died"); !ok || err != nil {
			t.Fatalf("InterruptRun = %v, %v", ok, err)
		}
		if r, _ := s.GetRun(ctx, "r1"); r.Status != runhub.StatusInterrupted || r.Error != "relay died" {
			t.Fatalf("interrupted run: %+v", r)
		}
		if ok, _ := s.InterruptRun(ctx, "r1", "again"); ok {
			t.Error("an ended run was interrupted again")
		}
		if err := s.AdoptRun(ctx, "r1", "new:3"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("adopting an ended run = %v", err)
		}
	})
}
