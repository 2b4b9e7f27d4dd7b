// audit.go: who started which run and who answered which interaction, and when.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"
)

// AuditEntry is one audited action.
type AuditEntry struct {
	At     time.Time
	ChatID string
	RunID  string
	// Action is "run.started", "run.<status>" or "interaction.<status>".
	Action string
	// By is who did it ("slack:U123", "console:alice", "policy", "timeout").
	By string
	// Detail is the agent for runs, the interaction id and kind for interactions.
	Detail string
}

const (
	queryAuditRuns = `SELECT id, chat_id, agent, status, started_by, started_at, ended_at, error FROM runs
WHERE ($1 = '' OR chat_id = $1) AND (started_at >= $2 OR ended_at >= $2)`
	queryAuditInteractions = `SELECT run_id, id, chat_id, kind, status, resolved_by, created_at, resolved_at FROM interactions
WHERE ($1 = '' OR chat_id = $1) AND (created_at >= $2 OR resolved_at >= $2)`
)

type auditRun struct {
	ID        string       `db:"id"`
	ChatID    string       `db:"chat_id"`
	Agent     string       `db:"agent"`
	Status    string       `db:"status"`
	StartedBy string       `db:"started_by"`
	StartedAt time.Time    `db:"started_at"`
	EndedAt   sql.NullTime `db:"ended_at"`
	Error     string       `db:"error"`
}

type auditInteraction struct {
	RunID      string       `db:"run_id"`
	ID         string       `db:"id"`
	ChatID     string       `db:"chat_id"`
	Kind       string       `db:"kind"`
	Status     string       `db:"status"`
	ResolvedBy string       `db:"resolved_by"`
	CreatedAt  time.Time    `db:"created_at"`
	ResolvedAt sql.NullTime `db:"resolved_at"`
}

// Audit returns the audited actions since the given time, of one chat or of all
// (chatID empty), oldest first.
func (s *Store) Audit(ctx context.Context, chatID string, since time.Time) ([]AuditEntry, error) {
	since = since.UTC()
	var runs []auditRun
	if err := s.db.SelectContext(ctx, &runs, queryAuditRuns, chatID, since); err != nil {
		return nil, fmt.Errorf("store: audit runs: %w", translate(err))
	}
	var ins []auditInteraction
	if err := s.db.SelectContext(ctx, &ins, queryAuditInteractions, chatID, since); err != nil {
		return nil, fmt.Errorf("store: audit interactions: %w", translate(err))
	}
	var out []AuditEntry
	add := func(e AuditEntry) {
		if !e.At.Before(since) {
			out = append(out, e)
		}
	}
	for _, r := range runs {
		add(AuditEntry{At: r.StartedAt.UTC(), ChatID: r.ChatID, RunID: r.ID, Action: "run.started", By: r.StartedBy, Detail: r.Agent})
		if r.EndedAt.Valid {
			detail := r.Agent
			if r.Error != "" {
				detail += ": " + r.Error
			}
			add(AuditEntry{At: r.EndedAt.Time.UTC(), ChatID: r.ChatID, RunID: r.ID, Action: "run." + r.Status, Detail: detail})
		}
	}
	for _, in := range ins {
		add(AuditEntry{At: in.CreatedAt.UTC(), ChatID: in.ChatID, RunID: in.RunID, Action: "interaction.requested", Detail: in.ID + " " + in.Kind})
		if in.ResolvedAt.Valid {
			add(AuditEntry{At: in.ResolvedAt.Time.UTC(), ChatID: in.ChatID, RunID: in.RunID, Action: "interaction." + in.Status, By: in.ResolvedBy, Detail: in.ID + " " + in.Kind})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
