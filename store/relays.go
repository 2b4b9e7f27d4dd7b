// relays.go: the store side of runs that survive their process under a relay:
// adopting them, and interrupting the runs of a process known to be dead.
package store

import (
	"context"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

const (
	queryAdoptRun     = `UPDATE runs SET owner = $2, heartbeat_at = $3 WHERE id = $1 AND status = 'running'`
	queryRunning      = `SELECT ` + runColumns + ` FROM runs WHERE status = 'running' ORDER BY started_at, id`
	queryInterruptRun = `UPDATE runs SET status = 'interrupted', ended_at = $2, error = $3
WHERE id = $1 AND status = 'running'`
)

// AdoptRun makes owner the owner of a running run and refreshes its heartbeat
// (a restarted process taking over a run whose agent survived under a relay).
// A run that is not running is ErrNotFound.
func (s *Store) AdoptRun(ctx context.Context, runID agent.RunID, owner string) error {
	res, err := s.db.ExecContext(ctx, queryAdoptRun, string(runID), owner, now())
	if err != nil {
		return fmt.Errorf("store: adopt run %s: %w", runID, translate(err))
	}
	return expectOne(res, "adopt run "+string(runID)+" (not running)")
}

// RunningRuns returns every running run, oldest first.
func (s *Store) RunningRuns(ctx context.Context) ([]Run, error) {
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, queryRunning); err != nil {
		return nil, fmt.Errorf("store: running runs: %w", translate(err))
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// InterruptRun marks a running run interrupted with reason; it reports
// whether the run was running.
func (s *Store) InterruptRun(ctx context.Context, runID agent.RunID, reason string) (bool, error) {
	res, err := s.db.ExecContext(ctx, queryInterruptRun, string(runID), now(), reason)
	if err != nil {
		return false, fmt.Errorf("store: interrupt run %s: %w", runID, translate(err))
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
