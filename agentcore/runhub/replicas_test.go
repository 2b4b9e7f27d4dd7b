package runhub_test

import (
	"fmt"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestChatMovesBetweenReplicas: the runs of one chat land on alternating
// replicas (each with its own hub over one database). Every run's events are
// stored, in one gapless seq order, none twice; a hub never appends with a
// seq it cached before another replica wrote to the chat.
func TestChatMovesBetweenReplicas(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			u := storetest.URL(t, d)
			ctx := t.Context()
			var hubs []*runhub.Hub
			var first *store.Store
			for i := range 2 {
				s, err := store.OpenAndMigrate(ctx, u, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				if first == nil {
					first = s
				}
				hubs = append(hubs, newHub(t, s, runhub.Options{Owner: fmt.Sprint("replica-", i)}))
			}
			createChats(t, first, "c1")
			n := 0
			for round := range 5 {
				h := hubs[round%2]
				run := agent.RunID(fmt.Sprint("r", round))
				l, err := h.Acquire(ctx, runhub.RunRecord{ID: run, ChatID: "c1"})
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				for range 3 {
					n++
					ev, err := h.Append(ctx, "c1", run, "x", payload(n))
					if err != nil {
						t.Fatalf("round %d on replica %d: %v", round, round%2, err)
					}
					if ev.Seq != int64(n) {
						t.Errorf("round %d: seq %d, want %d", round, ev.Seq, n)
					}
				}
				if err := l.Release(ctx, runhub.StatusCompleted, nil, ""); err != nil {
					t.Fatal(err)
				}
				// The other replica appends without the lock (as a survivor
				// marking a dead replica's run interrupted does).
				n++
				if ev, err := hubs[(round+1)%2].Append(ctx, "c1", run, "swept", payload(n)); err != nil || ev.Seq != int64(n) {
					t.Fatalf("round %d: lock-less append on the other replica: seq %d, %v", round, ev.Seq, err)
				}
			}
			evs, err := first.EventsAfter(ctx, "c1", 0, 100)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != n {
				t.Fatalf("%d events stored, want %d", len(evs), n)
			}
			checkSeqs(t, evs, 0)
		})
	}
}
