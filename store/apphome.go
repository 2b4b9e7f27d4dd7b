// apphome.go: what a person's home page lists (the Slack App Home): the
// threads of a workspace where they started runs, each with its chat's
// latest run, read from thread_bindings, runs and the chat log, so the page
// is the same after a restart.

package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// HomeThread is a bound thread as a person's home page lists it.
type HomeThread struct {
	ThreadRef
	ChatID string
	// Title is the chat's title, else the text of its first prompt.
	Title string
	// Status, StartedAt and EndedAt are those of the person's latest run in
	// the chat (not others' runs: see queryHomeThreads); EndedAt is zero
	// while it runs.
	Status    runhub.RunStatus
	StartedAt time.Time
	EndedAt   time.Time
}

// Running reports whether the person's latest run in the chat runs now.
func (h HomeThread) Running() bool { return h.Status == runhub.StatusRunning }

type homeRow struct {
	Channel     string         `db:"channel"`
	Thread      string         `db:"thread"`
	ChatID      string         `db:"chat_id"`
	Title       string         `db:"title"`
	FirstPrompt sql.NullString `db:"first_prompt"`
	Status      string         `db:"status"`
	StartedAt   time.Time      `db:"started_at"`
	EndedAt     sql.NullTime   `db:"ended_at"`
}

const (
	// queryHomeThreads: mine is the person's latest run per chat (index
	// runs_started_by), and l that run itself: the page shows the person's
	// own runs, never what others ran in the thread since (someone who has
	// left a private channel must not follow its activity from their home
	// page); the first user.message is at the head of the log.
	queryHomeThreads = `SELECT b.channel, b.thread, b.chat_id, c.title,
  (SELECT e.payload FROM chat_events e WHERE e.chat_id = b.chat_id AND e.type = $5 ORDER BY e.seq LIMIT 1) AS first_prompt,
  l.status, l.started_at, l.ended_at
FROM (SELECT chat_id, MAX(started_at) AS mine_at FROM runs WHERE started_by = $3 GROUP BY chat_id) mine
JOIN thread_bindings b ON b.chat_id = mine.chat_id AND b.platform = $1 AND b.workspace = $2
JOIN chats c ON c.id = b.chat_id
JOIN runs l ON l.id = (SELECT r.id FROM runs r WHERE r.chat_id = b.chat_id AND r.started_by = $3 ORDER BY r.started_at DESC, r.id DESC LIMIT 1)
ORDER BY CASE WHEN l.status = 'running' THEN 0 ELSE 1 END, mine.mine_at DESC, b.channel, b.thread
LIMIT $4`
	queryThreadStarters = `SELECT r.started_by FROM thread_bindings b JOIN runs r ON r.chat_id = b.chat_id
WHERE b.platform = $1 AND b.workspace = $2 AND b.channel = $3 AND b.thread = $4 AND r.started_by <> ''
GROUP BY r.started_by ORDER BY MAX(r.started_at) DESC, r.started_by LIMIT $5`
)

// HomeThreads returns up to limit threads of the platform's workspace in
// which by (a platform-qualified user id) started a run, each with by's
// latest run there: those where it runs now first, then the others by that
// run, newest first.
func (s *Store) HomeThreads(ctx context.Context, platform, workspace, by string, limit int) ([]HomeThread, error) {
	if limit <= 0 {
		limit = 10
	}
	var rows []homeRow
	if err := s.db.SelectContext(ctx, &rows, queryHomeThreads, platform, workspace, by, limit, chatlog.TypeUserMessage); err != nil {
		return nil, fmt.Errorf("store: home threads of %s: %w", by, translate(err))
	}
	out := make([]HomeThread, 0, len(rows))
	for _, r := range rows {
		h := HomeThread{ThreadRef: ThreadRef{Platform: platform, Workspace: workspace, Channel: r.Channel, Thread: r.Thread}, ChatID: r.ChatID,
			Title: r.Title, Status: runhub.RunStatus(r.Status), StartedAt: r.StartedAt.UTC()}
		if r.EndedAt.Valid {
			h.EndedAt = r.EndedAt.Time.UTC()
		}
		if h.Title == "" && r.FirstPrompt.Valid {
			if en, err := chatlog.Decode(chatlog.TypeUserMessage, []byte(r.FirstPrompt.String)); err == nil {
				h.Title = en.User.Text
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// ThreadStarters returns up to limit people (platform-qualified ids) who
// started runs in the chat bound to the thread, the most recent first: the
// people whose home page lists it.
func (s *Store) ThreadStarters(ctx context.Context, p ThreadRef, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 50
	}
	var out []string
	if err := s.db.SelectContext(ctx, &out, queryThreadStarters, p.Platform, p.Workspace, p.Channel, p.Thread, limit); err != nil {
		return nil, fmt.Errorf("store: starters of %s: %w", p, translate(err))
	}
	return out, nil
}
