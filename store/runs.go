// runs.go: the runs table, which is also the database-side one-run-per-chat lock.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Run is one stored run of a chat.
type Run struct {
	ID     string
	ChatID string
	Agent  string
	Model  string
	// AgentModel is the model the agent reported for the run ("" if none).
	AgentModel  string
	Status      runhub.RunStatus
	Owner       string
	StartedBy   string
	HeartbeatAt time.Time // zero when never set
	StartedAt   time.Time
	EndedAt     time.Time // zero while running
	Usage       json.RawMessage
	Error       string
}

type runRow struct {
	ID          string         `db:"id"`
	ChatID      string         `db:"chat_id"`
	Agent       string         `db:"agent"`
	Model       string         `db:"model"`
	AgentModel  string         `db:"agent_model"`
	Status      string         `db:"status"`
	Owner       string         `db:"owner"`
	StartedBy   string         `db:"started_by"`
	HeartbeatAt sql.NullTime   `db:"heartbeat_at"`
	StartedAt   time.Time      `db:"started_at"`
	EndedAt     sql.NullTime   `db:"ended_at"`
	Usage       sql.NullString `db:"usage"`
	Error       string         `db:"error"`
}

func (r runRow) run() Run {
	run := Run{
		ID: r.ID, ChatID: r.ChatID, Agent: r.Agent, Model: r.Model, AgentModel: r.AgentModel, Status: runhub.RunStatus(r.Status),
		Owner: r.Owner, StartedBy: r.StartedBy, StartedAt: r.StartedAt.UTC(), Error: r.Error,
	}
	if r.HeartbeatAt.Valid {
		run.HeartbeatAt = r.HeartbeatAt.Time.UTC()
	}
	if r.EndedAt.Valid {
		run.EndedAt = r.EndedAt.Time.UTC()
	}
	if r.Usage.Valid && r.Usage.String != "" {
		run.Usage = json.RawMessage(r.Usage.String)
	}
	return run
}

const (
	runColumns = `id, chat_id, agent, model, agent_model, status, owner, started_by, heartbeat_at, started_at, ended_at, usage, error`

	queryInsertRun = `INSERT INTO runs (id, chat_id, agent, model, status, owner, started_by, heartbeat_at, started_at)
VALUES ($1, $2, $3, $4, 'running', $5, $6, $7, $7)`
	queryFinishRun = `UPDATE runs SET status = $2, usage = $3, error = $4, ended_at = $5
WHERE id = $1 AND status = 'running'`
	queryRunExists     = `SELECT status FROM runs WHERE id = $1`
	queryGetRun        = `SELECT ` + runColumns + ` FROM runs WHERE id = $1`
	queryListRuns      = `SELECT ` + runColumns + ` FROM runs WHERE chat_id = $1 ORDER BY started_at, id`
	queryHeartbeatRuns = `UPDATE runs SET heartbeat_at = $2 WHERE owner = $1 AND status = 'running'`
	queryStaleRuns     = `UPDATE runs SET status = 'interrupted', ended_at = $1, error = $2
WHERE status = 'running' AND COALESCE(heartbeat_at, started_at) < $3 RETURNING ` + runColumns
)

// StartRun records run as running. It returns ErrRunActive (wrapping
// agent.ErrPromptAlreadyRunning) when another run of the chat is running,
// ErrConflict when the run id exists and ErrNotFound when the chat does not.
func (s *Store) StartRun(ctx context.Context, run runhub.RunRecord) error {
	started := run.StartedAt.UTC()
	if run.StartedAt.IsZero() {
		started = now()
	}
	_, err := s.db.ExecContext(ctx, queryInsertRun, run.ID, run.ChatID, run.Agent, run.Model,
		run.Owner, run.StartedBy, started)
	if err == nil {
		return nil
	}
	if name, ok := constraintOf(err); ok {
		// Postgres names the index; SQLite says "UNIQUE constraint failed: runs.chat_id".
		if name == "runs_one_running_per_chat" || strings.Contains(name, "runs.chat_id") {
			return fmt.Errorf("store: start run %s of chat %s: %w", run.ID, run.ChatID, ErrRunActive)
		}
	}
	if isFKViolation(err) {
		return fmt.Errorf("store: start run %s: chat %s: %w", run.ID, run.ChatID, ErrNotFound)
	}
	return fmt.Errorf("store: start run %s: %w", run.ID, translate(err))
}

// FinishRun moves a running run to status (completed, failed or interrupted) with
// its usage and error text. Finishing an already finished run is a no-op; an
// unknown run is ErrNotFound.
func (s *Store) FinishRun(ctx context.Context, runID agent.RunID, status runhub.RunStatus, usage json.RawMessage, errText string) error {
	if !status.Terminal() {
		return fmt.Errorf("store: finish run %s: invalid status %q", runID, status)
	}
	var u sql.NullString
	if len(usage) > 0 {
		u = sql.NullString{String: string(usage), Valid: true}
	}
	res, err := s.db.ExecContext(ctx, queryFinishRun, runID, status, u, errText, now())
	if err != nil {
		return fmt.Errorf("store: finish run %s: %w", runID, translate(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		var st string
		if err := s.db.GetContext(ctx, &st, queryRunExists, runID); err != nil {
			return fmt.Errorf("store: finish run %s: %w", runID, translate(err))
		}
	}
	return nil
}

// GetRun returns the run or ErrNotFound.
func (s *Store) GetRun(ctx context.Context, runID string) (Run, error) {
	var r runRow
	if err := s.db.GetContext(ctx, &r, queryGetRun, runID); err != nil {
		return Run{}, fmt.Errorf("store: get run %s: %w", runID, translate(err))
	}
	return r.run(), nil
}

// ListRuns returns the chat's runs, oldest first.
func (s *Store) ListRuns(ctx context.Context, chatID string) ([]Run, error) {
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, queryListRuns, chatID); err != nil {
		return nil, fmt.Errorf("store: list runs of chat %s: %w", chatID, translate(err))
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// HeartbeatRuns refreshes heartbeat_at of the running runs owned by owner and
// returns how many it touched.
func (s *Store) HeartbeatRuns(ctx context.Context, owner string) (int, error) {
	res, err := s.db.ExecContext(ctx, queryHeartbeatRuns, owner, now())
	if err != nil {
		return 0, fmt.Errorf("store: heartbeat runs of %s: %w", owner, translate(err))
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// MarkStaleRunsInterrupted is called at start-up and periodically: running runs
// whose heartbeat (or start, when they never had one) is older than before are
// taken to be dead — their replica stopped heartbeating — and become interrupted,
// except the runs listed in keep (their agents live on under a relay, waiting to
// be reattached). It returns them, so that their chats can say so.
func (s *Store) MarkStaleRunsInterrupted(ctx context.Context, before time.Time, keep ...string) ([]Run, error) {
	const reason = "interrupted: the process running it stopped"
	q, args := queryStaleRuns, []any{now(), reason, before.UTC()}
	if len(keep) > 0 {
		in, inArgs, err := sqlx.In(`?`, keep)
		if err != nil {
			return nil, fmt.Errorf("store: mark stale runs: %w", err)
		}
		// The keep list goes before RETURNING, as $4, $5, ...
		i := strings.Index(q, " RETURNING ")
		q = q[:i] + " AND id NOT IN (" + in + ")" + q[i:]
		q = renumber(q, 4)
		args = append(args, inArgs...)
	}
	var rows []runRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, fmt.Errorf("store: mark stale runs: %w", translate(err))
	}
	out := make([]Run, len(rows))
	for i, r := range rows {
		out[i] = r.run()
	}
	return out, nil
}

// renumber replaces each ? of q by $n, $n+1, ...
func renumber(q string, n int) string {
	var b strings.Builder
	for _, c := range q {
		if c == '?' {
			fmt.Fprintf(&b, "$%d", n)
			n++
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func expectOne(res sql.Result, what string) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("store: %s: %w", what, err)
	}
	if n == 0 {
		return fmt.Errorf("store: %s: %w", what, ErrNotFound)
	}
	return nil
}
