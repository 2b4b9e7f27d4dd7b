// Replicas: several `serve` processes over one Postgres. Each names itself
// in run rows (owner), and agentcore/lifecycle heartbeats its runs and sweeps
// those of replicas that stopped heartbeating (the failover bound is in its
// package doc); answers and cancels for runs of other replicas are routed to
// their owner over LISTEN/NOTIFY (prompt/route.go, store/notify.go). SQLite is
// single-process: no router.

package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/lifecycle"
	"github.com/threadline-bot/threadline/store"
)

// replicaOptions override a replica's name and liveness timing (tests).
type replicaOptions struct {
	owner          string
	heartbeatEvery time.Duration
	staleAfter     time.Duration
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
