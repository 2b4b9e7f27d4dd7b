// Replicas: several `serve` processes over one Postgres. Each names itself
// in run rows (owner), heartbeats its runs, sweeps the runs of replicas that
// stopped heartbeating (liveness.go), and routes interaction answers and
// cancels for runs of other replicas to their owner over LISTEN/NOTIFY
// (prompt/route.go, store/notify.go). SQLite is single-process: no router.
//
// Failover bound: a replica's runs carry a heartbeat refreshed every
// heartbeatEvery; a survivor's sweep (every heartbeatEvery) marks a run
// interrupted once its heartbeat is older than staleAfter. A replica that
// dies is detected between staleAfter-heartbeatEvery and
// staleAfter+heartbeatEvery after its death (35 to 55 s with the defaults).
// The heartbeat is written with the owner's clock and compared with the
// sweeper's: replicas' clocks must agree to well within
// staleAfter-heartbeatEvery (NTP).

package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/store"
)

// replicaOptions override a replica's name and liveness timing (tests).
type replicaOptions struct {
	owner          string
	heartbeatEvery time.Duration
	staleAfter     time.Duration
}

// withReplica names this process owner in run rows and sets its heartbeat
// period and the age at which other replicas' runs count as dead (zero keeps
// the defaults).
func withReplica(owner string, heartbeatEvery, staleAfter time.Duration) appOption {
	return func(o *appOptions) {
		o.replica = replicaOptions{owner: owner, heartbeatEvery: heartbeatEvery, staleAfter: staleAfter}
	}
}

func (o replicaOptions) withDefaults() replicaOptions {
	if o.owner == "" {
		o.owner = replicaID()
	}
	if o.heartbeatEvery <= 0 {
		o.heartbeatEvery = heartbeatEvery
	}
	if o.staleAfter <= 0 {
		o.staleAfter = staleAfter
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
