// interactions.go: the interaction ledger (approvals and questions per run).
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Interaction statuses. Pending is the only non-final one.
const (
	InteractionPending            = "pending"
	InteractionApproved           = "approved"
	InteractionApprovedForSession = "approved_for_session"
	InteractionDeclined           = "declined"
	InteractionCancelled          = "cancelled"
	InteractionAnswered           = "answered"
	InteractionTurnEnded          = "turn_ended"
	InteractionTimedOut           = "timed_out"
	InteractionExpired            = "expired"
)

// Interaction is one request from an agent to its user. Answer values are never
// stored: only the status, the decision and who resolved it.
type Interaction struct {
	RunID  string
	ID     string
	ChatID string
	// NativeID is the protocol's request id as compact JSON (7 and "7" differ).
	NativeID   json.RawMessage
	Kind       string
	Payload    json.RawMessage
	Status     string
	Decision   string
	ResolvedBy string
	CreatedAt  time.Time
	ResolvedAt time.Time // zero while pending
}

type interactionRow struct {
	RunID      string         `db:"run_id"`
	ID         string         `db:"id"`
	ChatID     string         `db:"chat_id"`
	NativeID   string         `db:"native_id"`
	Kind       string         `db:"kind"`
	Payload    sql.NullString `db:"payload"`
	Status     string         `db:"status"`
	Decision   string         `db:"decision"`
	ResolvedBy string         `db:"resolved_by"`
	CreatedAt  time.Time      `db:"created_at"`
	ResolvedAt sql.NullTime   `db:"resolved_at"`
}

func (r interactionRow) interaction() Interaction {
	in := Interaction{
		RunID: r.RunID, ID: r.ID, ChatID: r.ChatID, NativeID: json.RawMessage(r.NativeID), Kind: r.Kind,
		Status: r.Status, Decision: r.Decision, ResolvedBy: r.ResolvedBy, CreatedAt: r.CreatedAt.UTC(),
	}
	if r.Payload.Valid && r.Payload.String != "" {
		in.Payload = json.RawMessage(r.Payload.String)
	}
	if r.ResolvedAt.Valid {
		in.ResolvedAt = r.ResolvedAt.Time.UTC()
	}
	return in
}

const (
	interactionColumns = `run_id, id, chat_id, native_id, kind, payload, status, decision, resolved_by, created_at, resolved_at`

	queryInsertInteraction = `INSERT INTO interactions (run_id, id, chat_id, native_id, kind, payload, status, created_at)
VALUES ($1, $2, $3, $4, $5, $6, 'pending', $7)`
	queryResolveInteraction = `UPDATE interactions SET status = $3, decision = $4, resolved_by = $5, resolved_at = $6
WHERE run_id = $1 AND id = $2 AND status = 'pending'`
	queryGetInteraction   = `SELECT ` + interactionColumns + ` FROM interactions WHERE run_id = $1 AND id = $2`
	queryListInteractions = `SELECT ` + interactionColumns + ` FROM interactions WHERE chat_id = $1 ORDER BY created_at, id`
	queryPendingOfRun     = `SELECT ` + interactionColumns + ` FROM interactions WHERE run_id = $1 AND status = 'pending' ORDER BY created_at, id`
	queryExpireOrphans    = `UPDATE interactions SET status = 'expired', resolved_at = $1
WHERE status = 'pending' AND run_id NOT IN (SELECT id FROM runs WHERE status = 'running')
RETURNING ` + interactionColumns
)

// CreateInteraction records a pending interaction. A second request with the
// same (run, id) is ErrConflict; an unknown run is ErrNotFound.
func (s *Store) CreateInteraction(ctx context.Context, in Interaction) error {
	created := in.CreatedAt.UTC()
	if in.CreatedAt.IsZero() {
		created = now()
	}
	var payload sql.NullString
	if len(in.Payload) > 0 {
		payload = sql.NullString{String: string(in.Payload), Valid: true}
	}
	_, err := s.db.ExecContext(ctx, queryInsertInteraction, in.RunID, in.ID, in.ChatID, string(in.NativeID), in.Kind, payload, created)
	if err != nil {
		if isFKViolation(err) {
			return fmt.Errorf("store: create interaction %s: run %s: %w", in.ID, in.RunID, ErrNotFound)
		}
		return fmt.Errorf("store: create interaction %s of run %s: %w", in.ID, in.RunID, translate(err))
	}
	return nil
}

// ResolveInteraction moves a pending interaction to a final status. Resolving one
// that is already resolved is ErrConflict; an unknown one is ErrNotFound.
func (s *Store) ResolveInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID, status, decision, by string) error {
	switch status {
	case InteractionApproved, InteractionApprovedForSession, InteractionDeclined, InteractionCancelled,
		InteractionAnswered, InteractionTurnEnded, InteractionTimedOut, InteractionExpired:
	default:
		return fmt.Errorf("store: resolve interaction %s: invalid status %q", id, status)
	}
	res, err := s.db.ExecContext(ctx, queryResolveInteraction, string(runID), string(id), status, decision, by, now())
	if err != nil {
		return fmt.Errorf("store: resolve interaction %s: %w", id, translate(err))
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		in, err := s.GetInteraction(ctx, runID, id)
		if err != nil {
			return err
		}
		return fmt.Errorf("store: resolve interaction %s: already %s: %w", id, in.Status, ErrConflict)
	}
	return nil
}

// GetInteraction returns the interaction or ErrNotFound.
func (s *Store) GetInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID) (Interaction, error) {
	var r interactionRow
	if err := s.db.GetContext(ctx, &r, queryGetInteraction, string(runID), string(id)); err != nil {
		return Interaction{}, fmt.Errorf("store: get interaction %s of run %s: %w", id, runID, translate(err))
	}
	return r.interaction(), nil
}

// ListInteractions returns the chat's interactions, oldest first.
func (s *Store) ListInteractions(ctx context.Context, chatID string) ([]Interaction, error) {
	return s.selectInteractions(ctx, queryListInteractions, chatID)
}

// PendingInteractions returns the run's interactions still waiting for an answer.
func (s *Store) PendingInteractions(ctx context.Context, runID string) ([]Interaction, error) {
	return s.selectInteractions(ctx, queryPendingOfRun, runID)
}

func (s *Store) selectInteractions(ctx context.Context, q, arg string) ([]Interaction, error) {
	var rows []interactionRow
	if err := s.db.SelectContext(ctx, &rows, q, arg); err != nil {
		return nil, fmt.Errorf("store: list interactions: %w", translate(err))
	}
	out := make([]Interaction, len(rows))
	for i, r := range rows {
		out[i] = r.interaction()
	}
	return out, nil
}

// ExpireOrphanedInteractions is called at start-up, after stale runs were marked
// interrupted: interactions left pending by runs that no longer run become
// expired. It returns them, so that their cards can say so.
func (s *Store) ExpireOrphanedInteractions(ctx context.Context) ([]Interaction, error) {
	var rows []interactionRow
	if err := s.db.SelectContext(ctx, &rows, queryExpireOrphans, now()); err != nil {
		return nil, fmt.Errorf("store: expire interactions: %w", translate(err))
	}
	out := make([]Interaction, len(rows))
	for i, r := range rows {
		out[i] = r.interaction()
	}
	return out, nil
}
