package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestReplicaFailover: three replicas over one Postgres schema. While A
// heartbeats, the others' sweeps leave its run alone; once A dies (its
// heartbeat stops, nothing is cleaned up), a survivor marks the run
// interrupted within the bound and, with two survivors sweeping, the chat
// gets exactly one run.interrupted and one expiry of the pending card.
func TestReplicaFailover(t *testing.T) {
	isolate(t)
	const (
		beat  = 100 * time.Millisecond
		stale = time.Second
	)
	cfg := &configs.Config{Database: configs.DatabaseConfig{URL: storetest.URL(t, store.DialectPostgres)}}
	ctx := context.Background()
	open := func(owner string) *app {
		a, err := openApp(ctx, cfg, slog.New(slog.DiscardHandler), agent.ApprovalDeny, withReplica(owner, beat, stale))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = a.Close() })
		return a
	}
	a, b, c := open("replica-a"), open("replica-b"), open("replica-c")
	if a.router == nil || a.owner != "replica-a" {
		t.Fatalf("replica a: owner %q, router %v", a.owner, a.router)
	}

	if err := a.store.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "fake"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.hub.Acquire(ctx, runhub.RunRecord{ID: "run-a", ChatID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := a.store.CreateInteraction(ctx, store.Interaction{RunID: "run-a", ID: "i1", ChatID: "c1", NativeID: []byte(`1`), Kind: "command_approval"}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.hub.Acquire(ctx, runhub.RunRecord{ID: "run-b1", ChatID: "c1"}); err == nil {
		t.Fatal("replica b took the chat of a's running run")
	}

	// Alive: several staleAfter periods pass; A's heartbeat keeps its run.
	time.Sleep(3 * stale)
	if r, _ := b.store.GetRun(ctx, "run-a"); r.Status != runhub.StatusRunning || r.Owner != "replica-a" {
		t.Fatalf("a live replica's run was swept: %+v", r)
	}

	// A dies: its heartbeat stops; its lease, hub and store are left as they are.
	a.stopLive()
	<-a.liveDone
	died := time.Now()
	var took time.Duration
	for {
		r, err := b.store.GetRun(ctx, "run-a")
		if err != nil {
			t.Fatal(err)
		}
		if r.Status == runhub.StatusInterrupted {
			took = time.Since(died)
			break
		}
		if time.Since(died) > 10*stale {
			t.Fatalf("dead replica's run still %s after %s", r.Status, time.Since(died))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("dead replica detected after %s (heartbeat %s, stale after %s)", took, beat, stale)
	// Never before staleAfter (less one heartbeat of clock slack); the upper
	// bound leaves a loaded machine room for a late sweep.
	if took < stale-beat-20*time.Millisecond || took > stale+2*beat+1500*time.Millisecond {
		t.Errorf("detected after %s, outside [%s, %s]", took, stale-beat, stale+2*beat+1500*time.Millisecond)
	}

	// A few more sweeps of both survivors change nothing.
	time.Sleep(6 * beat)
	evs, err := c.store.EventsAfter(ctx, "c1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var interrupted, expired int
	for _, ev := range evs {
		switch ev.Type {
		case string(agent.EventRunInterrupted):
			interrupted++
		case string(agent.EventInteractionResolved):
			expired++
		}
	}
	if interrupted != 1 || expired != 1 || len(evs) != 2 {
		t.Errorf("events after the failover: %d run.interrupted, %d interaction.resolved, %d in all", interrupted, expired, len(evs))
	}
	if in, _ := c.store.GetInteraction(ctx, "run-a", "i1"); in.Status != store.InteractionExpired {
		t.Errorf("pending card: %+v", in)
	}
	// The chat is free again for a survivor.
	l, err := b.hub.Acquire(ctx, runhub.RunRecord{ID: "run-b2", ChatID: "c1"})
	if err != nil {
		t.Fatalf("survivor cannot take the chat: %v", err)
	}
	_ = l.Release(ctx, runhub.StatusCompleted, nil, "")
}

// withReplica names this process owner in run rows and sets its heartbeat
// period and the age at which other replicas' runs count as dead (zero keeps
// the defaults).
func withReplica(owner string, heartbeatEvery, staleAfter time.Duration) appOption {
	return func(o *appOptions) {
		o.replica = replicaOptions{owner: owner, heartbeatEvery: heartbeatEvery, staleAfter: staleAfter}
	}
}
