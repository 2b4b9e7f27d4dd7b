// Package lifestore is the store as agentcore/lifecycle's Store: the runs
// and interactions the heartbeat, the sweep of dead replicas and the
// recovery at start read and change.
package lifestore

import (
	"context"
	"errors"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// Store is the store as lifecycle.Store.
type Store struct{ St *store.Store }

var _ lifecycle.Store = Store{}

func lifeRun(r store.Run) lifecycle.Run {
	return lifecycle.Run{ID: agent.RunID(r.ID), ChatID: agent.ChatID(r.ChatID), Status: r.Status, Owner: r.Owner, StartedAt: r.StartedAt, HeartbeatAt: r.HeartbeatAt}
}

// Run is the run runID; lifecycle.ErrNotFound when there is none.
func (s Store) Run(ctx context.Context, runID string) (lifecycle.Run, error) {
	r, err := s.St.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return lifecycle.Run{}, errors.Join(err, lifecycle.ErrNotFound)
	}
	return lifeRun(r), err
}

// RunningRun is the chat's running run, if any.
func (s Store) RunningRun(ctx context.Context, chatID string) (lifecycle.Run, bool, error) {
	runs, err := s.St.ListRuns(ctx, chatID)
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

// HeartbeatRuns refreshes the heartbeat of owner's running runs.
func (s Store) HeartbeatRuns(ctx context.Context, owner string) (int, error) {
	return s.St.HeartbeatRuns(ctx, owner)
}

// MarkStaleRunsInterrupted interrupts the running runs whose heartbeat is
// older than before, except keep.
func (s Store) MarkStaleRunsInterrupted(ctx context.Context, before time.Time, keep ...string) ([]lifecycle.Run, error) {
	runs, err := s.St.MarkStaleRunsInterrupted(ctx, before, keep...)
	out := make([]lifecycle.Run, len(runs))
	for i, r := range runs {
		out[i] = lifeRun(r)
	}
	return out, err
}

// InterruptRun marks runID interrupted with reason.
func (s Store) InterruptRun(ctx context.Context, runID agent.RunID, reason string) (bool, error) {
	return s.St.InterruptRun(ctx, runID, reason)
}

// ExpireOrphanedInteractions expires the pending interactions of runs
// that ended.
func (s Store) ExpireOrphanedInteractions(ctx context.Context) ([]lifecycle.Interaction, error) {
	ins, err := s.St.ExpireOrphanedInteractions(ctx)
	out := make([]lifecycle.Interaction, len(ins))
	for i, in := range ins {
		out[i] = lifecycle.Interaction{ID: agent.InteractionID(in.ID), ChatID: agent.ChatID(in.ChatID), RunID: agent.RunID(in.RunID)}
	}
	return out, err
}
