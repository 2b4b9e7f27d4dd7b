// Replicas: several `serve` processes over one Postgres. Each names itself
// in run rows (owner), and agentcore/lifecycle heartbeats its runs and sweeps
// those of replicas that stopped heartbeating (the failover bound is in its
// package doc); answers and cancels for runs of other replicas are routed to
// their owner over LISTEN/NOTIFY (prompt/route.go, store/notify.go). The
// chat platforms' rate budgets are shared too: every outbox of a workspace,
// on whichever replica, takes its tokens from one bucket per kind of call in
// Postgres (store/ratelimit.go), and a 429 seen by one pauses all. A
// database that fails or stalls holds no posting up: an outbox waits at most
// 500 ms for its answer, then goes on within its own buckets and leaves the
// shared budget alone for 30 s (chatops/outbox/limiter.go). SQLite is
// single-process: no router, and each outbox's own buckets are the budget.

package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// replicaOptions override a replica's name and liveness timing (tests).
type replicaOptions struct {
	owner          string
	heartbeatEvery time.Duration
	staleAfter     time.Duration
	// ownBudget keeps each outbox within its own buckets on Postgres too
	// (tests: the budget without sharing).
	ownBudget bool
}

// withDefaults names an unnamed replica "host:pid".
func (o replicaOptions) withDefaults() replicaOptions {
	if o.owner == "" {
		o.owner = lifecycle.OwnerID()
	}
	return o
}

// openRouter opens the LISTEN/NOTIFY router on Postgres; nil on SQLite.
func openRouter(ctx context.Context, st *store.Store, log *slog.Logger) (*store.Router, error) {
	rt, err := st.NewRouter(ctx, log)
	if errors.Is(err, store.ErrNoNotify) {
		return nil, nil
	}
	return rt, err
}

// sharedBudget is the rate budget the outboxes share with the other
// replicas: the store's shared rate limits on Postgres (wherever there is a
// router, replicas are possible), nil on SQLite.
func (a *app) sharedBudget() chatops.Limiter {
	if a.router == nil || a.live.ownBudget {
		return nil
	}
	l, err := a.store.RateLimits()
	if err != nil {
		a.log.Warn("rate budget not shared with other replicas", "err", err)
		return nil
	}
	return l
}
