// Liveness wiring: the run-lifecycle policy is agentcore/lifecycle's; this
// file adapts the store to it and names this process's replica.

package main

import (
	"context"
	"errors"
	"time"

	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// lifecycleStore is the store as lifecycle.Store.
type lifecycleStore struct{ st *store.Store }

func lifeRun(r store.Run) lifecycle.Run {
	return lifecycle.Run{ID: r.ID, ChatID: r.ChatID, Status: r.Status, Owner: r.Owner, StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt}
}

func (s lifecycleStore) Run(ctx context.Context, runID string) (lifecycle.Run, error) {
	r, err := s.st.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return lifecycle.Run{}, errors.Join(err, lifecycle.ErrNotFound)
	}
	return lifeRun(r), err
}

func (s lifecycleStore) RunningRun(ctx context.Context, chatID string) (lifecycle.Run, bool, error) {
	runs, err := s.st.ListRuns(ctx, chatID)
	if err != nil {
		return lifecycle.Run{}, false, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if runs[i].Status == runhub.StatusRunning {
			return lifeRun(runs[i]), true, nil
		}
	}
	return lifecycle.Run{}, false, nil
}

func (s lifecycleStore) HeartbeatRuns(ctx context.Context, owner string) (int, error) {
	return s.st.HeartbeatRuns(ctx, owner)
}

func (s lifecycleStore) MarkStaleRunsInterrupted(ctx context.Context, before time.Time, keep ...string) ([]lifecycle.Run, error) {
	runs, err := s.st.MarkStaleRunsInterrupted(ctx, before, keep...)
	out := make([]lifecycle.Run, len(runs))
	for i, r := range runs {
		out[i] = lifeRun(r)
	}
	return out, err
}

func (s lifecycleStore) InterruptRun(ctx context.Context, runID, reason string) (bool, error) {
	return s.st.InterruptRun(ctx, runID, reason)
}

func (s lifecycleStore) ExpireOrphanedInteractions(ctx context.Context) ([]lifecycle.Interaction, error) {
	ins, err := s.st.ExpireOrphanedInteractions(ctx)
	out := make([]lifecycle.Interaction, len(ins))
	for i, in := range ins {
		out[i] = lifecycle.Interaction{ID: in.ID, ChatID: in.ChatID, RunID: in.RunID}
	}
	return out, err
}
