// chatops.go: the tables the chat front-ends use: thread_bindings, seen_events
// and rendered_messages (migration 0003), and ForkChat. The row types are the
// store's own; chatops/chatstore adapts them to chatops.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

const (
	bindingColumns = `platform, workspace, channel, thread, chat_id, created_by, created_at`

	queryGetBinding = `SELECT ` + bindingColumns + ` FROM thread_bindings
WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4`
	queryInsertBinding = `INSERT INTO thread_bindings (` + bindingColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`
	queryBindingsOfChat = `SELECT ` + bindingColumns + ` FROM thread_bindings WHERE chat_id = $1
ORDER BY created_at, platform, workspace, channel, thread`

	queryInsertSeen = `INSERT INTO seen_events (platform, event_id, seen_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`
	queryPruneSeen  = `DELETE FROM seen_events WHERE seen_at < $1`

	renderedColumns = `run_id, slot, chat_id, platform, workspace, channel, thread, message_id, first_seq, last_seq, hash, final, updated_at`

	queryRendered = `SELECT ` + renderedColumns + ` FROM rendered_messages WHERE run_id = $1 ORDER BY slot`
	queryOpen     = `SELECT ` + renderedColumns + ` FROM rendered_messages WHERE platform = $1 AND final = FALSE
ORDER BY chat_id, first_seq, slot`
	queryUpsertRendered = `INSERT INTO rendered_messages (` + renderedColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT (run_id, slot) DO UPDATE SET message_id = excluded.message_id, first_seq = excluded.first_seq,
last_seq = excluded.last_seq, hash = excluded.hash, final = excluded.final, updated_at = excluded.updated_at`

	queryForkChat = `INSERT INTO chats (` + chatColumns + `)
SELECT $2, title, agent, model, effort, mode, project, cwd, '{}', TRUE, $3, $3,
id, COALESCE((SELECT MAX(e.seq) FROM chat_events e WHERE e.chat_id = $1), 0), sessions FROM chats WHERE id = $1`
)

// ThreadRef names a platform thread: platform ("slack", "matrix", "console"),
// workspace (Slack team, Matrix server; may be empty), channel or room, and
// the thread's root.
type ThreadRef struct {
	Platform, Workspace, Channel, Thread string
}

// String renders the thread for errors and logs.
func (t ThreadRef) String() string {
	return t.Platform + ":" + t.Workspace + "/" + t.Channel + "/" + t.Thread
}

// Binding is a row of thread_bindings: the chat a thread is bound to.
type Binding struct {
	ThreadRef
	ChatID    string
	CreatedBy string
	CreatedAt time.Time
}

// RenderedMessage is a row of rendered_messages: one platform message a run
// was rendered into, identified by (RunID, Slot).
type RenderedMessage struct {
	RunID, Slot, ChatID string
	ThreadRef
	MessageID         string // empty until posted
	FirstSeq, LastSeq int64
	Hash              string
	Final             bool
}

type bindingRow struct {
	Platform  string    `db:"platform"`
	Workspace string    `db:"workspace"`
	Channel   string    `db:"channel"`
	Thread    string    `db:"thread"`
	ChatID    string    `db:"chat_id"`
	CreatedBy string    `db:"created_by"`
	CreatedAt time.Time `db:"created_at"`
}

func (r bindingRow) binding() Binding {
	return Binding{
		ThreadRef: ThreadRef{Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Thread: r.Thread},
		ChatID:    r.ChatID, CreatedBy: r.CreatedBy, CreatedAt: r.CreatedAt.UTC(),
	}
}

// Binding returns the chat bound to the thread; ok is false when none is.
func (s *Store) Binding(ctx context.Context, p ThreadRef) (Binding, bool, error) {
	var r bindingRow
	err := s.db.GetContext(ctx, &r, queryGetBinding, p.Platform, p.Workspace, p.Channel, p.Thread)
	if err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return Binding{}, false, nil
		}
		return Binding{}, false, fmt.Errorf("store: binding of %s: %w", p, err)
	}
	return r.binding(), true, nil
}

// Bind binds the thread to b.ChatID unless it is bound already and returns the
// binding in force. A chat that does not exist is ErrNotFound.
func (s *Store) Bind(ctx context.Context, b Binding) (Binding, bool, error) {
	t := b.CreatedAt.UTC()
	if b.CreatedAt.IsZero() {
		t = now()
	}
	res, err := s.db.ExecContext(ctx, queryInsertBinding, b.Platform, b.Workspace, b.Channel, b.Thread, b.ChatID, b.CreatedBy, t)
	if err != nil {
		if isFKViolation(err) {
			return Binding{}, false, fmt.Errorf("store: bind %s: chat %s: %w", b.ThreadRef, b.ChatID, ErrNotFound)
		}
		return Binding{}, false, fmt.Errorf("store: bind %s: %w", b.ThreadRef, translate(err))
	}
	n, _ := res.RowsAffected()
	in, ok, err := s.Binding(ctx, b.ThreadRef)
	if err != nil {
		return Binding{}, false, err
	}
	if !ok {
		return Binding{}, false, fmt.Errorf("store: bind %s: %w", b.ThreadRef, ErrNotFound)
	}
	return in, n == 1, nil
}

// BindingsOfChat returns the threads bound to the chat, oldest first.
func (s *Store) BindingsOfChat(ctx context.Context, chatID string) ([]Binding, error) {
	var rows []bindingRow
	if err := s.db.SelectContext(ctx, &rows, queryBindingsOfChat, chatID); err != nil {
		return nil, fmt.Errorf("store: bindings of chat %s: %w", chatID, translate(err))
	}
	out := make([]Binding, len(rows))
	for i, r := range rows {
		out[i] = r.binding()
	}
	return out, nil
}

// FirstSeen records the platform event id and reports whether it is new.
func (s *Store) FirstSeen(ctx context.Context, platform, eventID string) (bool, error) {
	res, err := s.db.ExecContext(ctx, queryInsertSeen, platform, eventID, now())
	if err != nil {
		return false, fmt.Errorf("store: record event %s:%s: %w", platform, eventID, translate(err))
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: record event %s:%s: %w", platform, eventID, err)
	}
	return n == 1, nil
}

// PruneSeen deletes the event ids seen before t.
func (s *Store) PruneSeen(ctx context.Context, before time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, queryPruneSeen, before.UTC())
	if err != nil {
		return 0, fmt.Errorf("store: prune seen events: %w", translate(err))
	}
	return res.RowsAffected()
}

type renderedRow struct {
	RunID     string    `db:"run_id"`
	Slot      string    `db:"slot"`
	ChatID    string    `db:"chat_id"`
	Platform  string    `db:"platform"`
	Workspace string    `db:"workspace"`
	Channel   string    `db:"channel"`
	Thread    string    `db:"thread"`
	MessageID string    `db:"message_id"`
	FirstSeq  int64     `db:"first_seq"`
	LastSeq   int64     `db:"last_seq"`
	Hash      string    `db:"hash"`
	Final     bool      `db:"final"`
	UpdatedAt time.Time `db:"updated_at"`
}

func (r renderedRow) message() RenderedMessage {
	return RenderedMessage{
		RunID: r.RunID, Slot: r.Slot, ChatID: r.ChatID,
		ThreadRef: ThreadRef{Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Thread: r.Thread},
		MessageID: r.MessageID, FirstSeq: r.FirstSeq, LastSeq: r.LastSeq, Hash: r.Hash, Final: r.Final,
	}
}

func (s *Store) selectRendered(ctx context.Context, q string, arg string) ([]RenderedMessage, error) {
	var rows []renderedRow
	if err := s.db.SelectContext(ctx, &rows, q, arg); err != nil {
		return nil, translate(err)
	}
	out := make([]RenderedMessage, len(rows))
	for i, r := range rows {
		out[i] = r.message()
	}
	return out, nil
}

// RenderedMessages returns the run's rendered messages ordered by slot.
func (s *Store) RenderedMessages(ctx context.Context, runID string) ([]RenderedMessage, error) {
	out, err := s.selectRendered(ctx, queryRendered, runID)
	if err != nil {
		return nil, fmt.Errorf("store: rendered messages of run %s: %w", runID, err)
	}
	return out, nil
}

// OpenRenders returns the platform's rendered messages not yet final.
func (s *Store) OpenRenders(ctx context.Context, platform string) ([]RenderedMessage, error) {
	out, err := s.selectRendered(ctx, queryOpen, platform)
	if err != nil {
		return nil, fmt.Errorf("store: open renders of %s: %w", platform, err)
	}
	return out, nil
}

// SaveRenderedMessage inserts or replaces the row of (RunID, Slot).
func (s *Store) SaveRenderedMessage(ctx context.Context, m RenderedMessage) error {
	p := m.ThreadRef
	if _, err := s.db.ExecContext(ctx, queryUpsertRendered, m.RunID, m.Slot, m.ChatID, p.Platform, p.Workspace,
		p.Channel, p.Thread, m.MessageID, m.FirstSeq, m.LastSeq, m.Hash, m.Final, now()); err != nil {
		return fmt.Errorf("store: save rendered message %s/%s: %w", m.RunID, m.Slot, translate(err))
	}
	return nil
}

// ForkChat copies chat fromID's settings as newID, forked from it at its last
// event (ForkedFrom, ForkSeq), with no native session of its own: the
// parent's sessions become the fork's ForkSessions and fork_pending is set,
// so that a provider that forks natively branches from them on the fork's
// first run. The parent is not changed. A missing chat is ErrNotFound; an
// existing newID is ErrConflict.
func (s *Store) ForkChat(ctx context.Context, fromID, newID string) error {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		res, err := tx.ExecContext(ctx, queryForkChat, fromID, newID, now())
		if err != nil {
			return translate(err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: fork chat %s as %s: %w", fromID, newID, err)
	}
	return nil
}
