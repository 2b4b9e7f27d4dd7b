package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestInteractions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		newChat(t, s, "c1")
		if err := s.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1"}); err != nil {
			t.Fatal(err)
		}
		for _, in := range []store.Interaction{
			{RunID: "r1", ID: "a", ChatID: "c1", NativeID: []byte(`7`), Kind: "command_approval", Payload: []byte(`{"command":"ls"}`)},
			{RunID: "r1", ID: "b", ChatID: "c1", NativeID: []byte(`"7"`), Kind: "question"},
		} {
			if err := s.CreateInteraction(ctx, in); err != nil {
				t.Fatal(err)
			}
		}
		t.Run("native ids are kept byte-exact", func(t *testing.T) {
			a, _ := s.GetInteraction(ctx, "r1", "a")
			b, _ := s.GetInteraction(ctx, "r1", "b")
			if string(a.NativeID) != `7` || string(b.NativeID) != `"7"` || a.Status != store.InteractionPending {
				t.Errorf("a=%s %s b=%s", a.NativeID, a.Status, b.NativeID)
			}
		})
		t.Run("duplicate and unknown run", func(t *testing.T) {
			err := s.CreateInteraction(ctx, store.Interaction{RunID: "r1", ID: "a", ChatID: "c1", NativeID: []byte(`1`), Kind: "x"})
			if !errors.Is(err, store.ErrConflict) {
				t.Errorf("duplicate: %v", err)
			}
			err = s.CreateInteraction(ctx, store.Interaction{RunID: "nope", ID: "a", ChatID: "c1", NativeID: []byte(`1`), Kind: "x"})
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("unknown run: %v", err)
			}
		})
		t.Run("resolve once", func(t *testing.T) {
			if err := s.ResolveInteraction(ctx, "r1", "a", store.InteractionApproved, "approve", "slack:U1"); err != nil {
				t.Fatal(err)
			}
			a, _ := s.GetInteraction(ctx, "r1", "a")
			if a.Status != store.InteractionApproved || a.ResolvedBy != "slack:U1" || a.ResolvedAt.IsZero() {
				t.Errorf("%+v", a)
			}
			if err := s.ResolveInteraction(ctx, "r1", "a", store.InteractionDeclined, "decline", "x"); !errors.Is(err, store.ErrConflict) {
				t.Errorf("second resolve: %v", err)
			}
			if err := s.ResolveInteraction(ctx, "r1", "zz", store.InteractionDeclined, "", ""); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("unknown: %v", err)
			}
			if err := s.ResolveInteraction(ctx, "r1", "b", "maybe", "", ""); err == nil {
				t.Error("invalid status accepted")
			}
		})
		t.Run("orphans expire at start-up", func(t *testing.T) {
			p, _ := s.PendingInteractions(ctx, "r1")
			if len(p) != 1 || p[0].ID != "b" {
				t.Fatalf("pending %+v", p)
			}
			if ex, err := s.ExpireOrphanedInteractions(ctx); err != nil || len(ex) != 0 {
				t.Fatalf("a running run's interactions expired: %v %v", ex, err)
			}
			if _, err := s.MarkStaleRunsInterrupted(ctx, time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if ex, err := s.ExpireOrphanedInteractions(ctx); err != nil || len(ex) != 1 || ex[0].ID != "b" || ex[0].ChatID != "c1" || ex[0].Status != store.InteractionExpired {
				t.Fatalf("expired %+v %v", ex, err)
			}
			all, _ := s.ListInteractions(ctx, "c1")
			if len(all) != 2 || all[1].Status != store.InteractionExpired {
				t.Errorf("%+v", all)
			}
		})
	})
}
