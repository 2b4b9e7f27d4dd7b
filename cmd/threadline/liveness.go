// Liveness: heartbeats for this process's runs, and the sweep that marks runs of
// dead processes interrupted and expires their pending interactions.

package main

import (
	"context"
	"encoding/json"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

const (
	// heartbeatEvery is how often this process refreshes its running runs.
	heartbeatEvery = 10 * time.Second
	// staleAfter is how old a run's heartbeat may get before the run is taken
	// to be dead (several missed heartbeats).
	staleAfter = 45 * time.Second
)

// heartbeat refreshes this process's runs and sweeps dead ones until Close.
func (a *app) heartbeat() {
	defer close(a.liveDone)
	t := time.NewTicker(a.live.heartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-a.liveCtx.Done():
			return
		case <-t.C:
			if _, err := a.store.HeartbeatRuns(a.liveCtx, a.owner); err != nil && a.liveCtx.Err() == nil {
				a.log.Warn("heartbeat runs", "err", err)
			}
			a.prompt.Fence(a.liveCtx, a.ownsRun)
			a.sweep(a.liveCtx)
		}
	}
}

// sweep marks runs whose process stopped heartbeating interrupted and expires
// the interactions they left pending, appending events so that every front-end
// shows it.
func (a *app) sweep(ctx context.Context) {
	runs, err := a.store.MarkStaleRunsInterrupted(ctx, time.Now().Add(-a.live.staleAfter), relayedRuns()...)
	if err != nil {
		a.log.WarnContext(ctx, "mark stale runs", "err", err)
	}
	for _, r := range runs {
		a.log.InfoContext(ctx, "run of a stopped process marked interrupted", "chat", r.ChatID, "run", r.ID, "owner", r.Owner)
		a.appendEvent(ctx, r.ChatID, r.ID, agent.Event{
			Type: agent.EventRunInterrupted,
			Text: "Threadline stopped while this run was active. Send your message again to continue.",
		})
	}
	expired, err := a.store.ExpireOrphanedInteractions(ctx)
	if err != nil {
		a.log.WarnContext(ctx, "expire interactions", "err", err)
	}
	for _, in := range expired {
		a.appendEvent(ctx, in.ChatID, in.RunID, agent.Event{
			Type:       agent.EventInteractionResolved,
			Resolution: &agent.Resolution{InteractionID: in.ID, Status: agent.StatusExpired},
		})
	}
}

func (a *app) appendEvent(ctx context.Context, chatID, runID string, ev agent.Event) {
	b, _ := json.Marshal(ev)
	if _, err := a.hub.Append(ctx, chatID, runID, string(ev.Type), b); err != nil {
		a.log.WarnContext(ctx, "append event", "chat", chatID, "type", ev.Type, "err", err)
	}
}

// relayedRuns lists the runs whose agent lives on under a relay of this host
// (or whose output it journaled to the end): a stopped `serve` reattaches them at
// its next start, so no other process may mark them interrupted meanwhile.
func relayedRuns() []string {
	states, err := procrun.ListRelays(relayDir())
	if err != nil {
		return nil
	}
	var ids []string
	for _, st := range states {
		if st.Reattachable() {
			ids = append(ids, st.RunID)
		}
	}
	return ids
}

// ownsRun reports whether the database still has the run running under this
// process: after a partition longer than the stale period another replica may
// have marked it interrupted, or adopted it.
func (a *app) ownsRun(ctx context.Context, runID string) (bool, error) {
	r, err := a.store.GetRun(ctx, runID)
	if err != nil {
		return false, err
	}
	return r.Status == runhub.StatusRunning && r.Owner == a.owner, nil
}
