// audit.go: who started which run and who answered which interaction, and when.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// AuditEntry is one audited action.
type AuditEntry struct {
	At     time.Time
	ChatID string
	RunID  string
	// Action is "run.started", "run.<status>", "interaction.<status>",
	// "file.sent" or "file.refused" (a run's thread tools).
	Action string
	// By is who did it ("slack:U123", "console:alice", "policy", "timeout").
	By string
	// Detail is the agent for runs, the interaction id and kind for
	// interactions, the line of the run's log for files (name, size and
	// sha256; or why it was refused).
	Detail string
}

const (
	queryAuditRuns = `SELECT id, chat_id, agent, status, started_by, started_at, ended_at, error FROM runs
WHERE ($1 = '' OR chat_id = $1) AND (started_at >= $2 OR ended_at >= $2)`
	queryAuditInteractions = `SELECT run_id, id, chat_id, kind, status, resolved_by, created_at, resolved_at FROM interactions
WHERE ($1 = '' OR chat_id = $1) AND (created_at >= $2 OR resolved_at >= $2)`
	// queryAuditFiles finds the system events of the thread tools
	// (threadtools.SubtypeFileSent, SubtypeFileRefused) in the chat log.
	queryAuditFiles = `SELECT chat_id, run_id, payload, created_at FROM chat_events
WHERE ($1 = '' OR chat_id = $1) AND created_at >= $2 AND type = 'system'
AND (payload LIKE '%"subtype":"file_sent"%' OR payload LIKE '%"subtype":"file_refused"%')`
)

type auditFile struct {
	ChatID    string         `db:"chat_id"`
	RunID     sql.NullString `db:"run_id"`
	Payload   string         `db:"payload"`
	CreatedAt time.Time      `db:"created_at"`
}

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
	var files []auditFile
	if err := s.db.SelectContext(ctx, &files, queryAuditFiles, chatID, since); err != nil {
		return nil, fmt.Errorf("store: audit files: %w", translate(err))
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
	for _, f := range files {
		var e struct {
			Subtype string `json:"subtype"`
			Text    string `json:"text"`
		}
		if json.Unmarshal([]byte(f.Payload), &e) != nil {
			continue
		}
		action := "file.sent"
		if e.Subtype == "file_refused" {
			action = "file.refused"
		}
		add(AuditEntry{At: f.CreatedAt.UTC(), ChatID: f.ChatID, RunID: f.RunID.String, Action: action, By: "agent", Detail: e.Text})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}
