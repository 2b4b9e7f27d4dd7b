// chats.go: the chats table (settings and per-provider native sessions).
package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"
)

// Chat is one persistent conversation with an agent.
type Chat struct {
	ID      string
	Title   string
	Agent   string
	Model   string
	Effort  string
	Mode    string
	Project string
	Cwd     string
	// Sessions maps a provider id to that provider's native session id.
	Sessions map[string]string
	// ForkPending is set when the next run must fork the native session; it is
	// cleared by SetSession.
	ForkPending bool
	// ForkedFrom is the chat this one was forked from ("" for none), and
	// ForkSeq that chat's last event seq when it was: the fork's visible
	// history starts with the parent's up to ForkSeq.
	ForkedFrom string
	ForkSeq    int64
	// ForkSessions are the parent's native sessions at the fork, which a
	// provider that forks natively branches from on the fork's first run.
	ForkSessions map[string]string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

type chatRow struct {
	ID          string    `db:"id"`
	Title       string    `db:"title"`
	Agent       string    `db:"agent"`
	Model       string    `db:"model"`
	Effort      string    `db:"effort"`
	Mode        string    `db:"mode"`
	Project     string    `db:"project"`
	Cwd         string    `db:"cwd"`
	Sessions    string    `db:"sessions"`
	ForkPending bool      `db:"fork_pending"`
	CreatedAt   time.Time `db:"created_at"`
	UpdatedAt   time.Time `db:"updated_at"`
	ForkedFrom  string    `db:"forked_from"`
	ForkSeq     int64     `db:"fork_seq"`
	ForkSess    string    `db:"fork_sessions"`
}

func (r chatRow) chat() (Chat, error) {
	c := Chat{
		ID: r.ID, Title: r.Title, Agent: r.Agent, Model: r.Model, Effort: r.Effort,
		Mode: r.Mode, Project: r.Project, Cwd: r.Cwd, ForkPending: r.ForkPending,
		CreatedAt: r.CreatedAt.UTC(), UpdatedAt: r.UpdatedAt.UTC(),
		Sessions: map[string]string{}, ForkedFrom: r.ForkedFrom, ForkSeq: r.ForkSeq, ForkSessions: map[string]string{},
	}
	if r.Sessions != "" {
		if err := json.Unmarshal([]byte(r.Sessions), &c.Sessions); err != nil {
			return Chat{}, fmt.Errorf("store: chat %s sessions: %w", r.ID, err)
		}
	}
	if r.ForkSess != "" {
		if err := json.Unmarshal([]byte(r.ForkSess), &c.ForkSessions); err != nil {
			return Chat{}, fmt.Errorf("store: chat %s fork sessions: %w", r.ID, err)
		}
	}
	return c, nil
}

const (
	chatColumns = `id, title, agent, model, effort, mode, project, cwd, sessions, fork_pending, created_at, updated_at,
forked_from, fork_seq, fork_sessions`

	queryInsertChat = `INSERT INTO chats (` + chatColumns + `)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`
	queryGetChat   = `SELECT ` + chatColumns + ` FROM chats WHERE id = $1`
	queryListChats = `SELECT ` + chatColumns + ` FROM chats ORDER BY updated_at DESC, id LIMIT $1`
	// substr compares exactly in both dialects (SQLite's LIKE ignores case).
	queryChatsByPrefix = `SELECT id FROM chats WHERE substr(id, 1, $1) = $2 ORDER BY id LIMIT $3`
	queryUpdateChat    = `UPDATE chats SET title = $2, agent = $3, model = $4, effort = $5, mode = $6,
project = $7, cwd = $8, fork_pending = $9, updated_at = $10 WHERE id = $1`
	queryDeleteChatEvents = `DELETE FROM chat_events WHERE chat_id = $1`
	queryDeleteChat       = `DELETE FROM chats WHERE id = $1`
	queryChatSessions     = `SELECT sessions FROM chats WHERE id = $1`
	querySetSessions      = `UPDATE chats SET sessions = $2, fork_pending = FALSE, updated_at = $3 WHERE id = $1`
)

func now() time.Time { return time.Now().UTC() }

func encodeSessions(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("store: encode sessions: %w", err)
	}
	return string(b), nil
}

// CreateChat inserts c, setting CreatedAt and UpdatedAt. A duplicate id is
// ErrConflict.
func (s *Store) CreateChat(ctx context.Context, c *Chat) error {
	sessions, err := encodeSessions(c.Sessions)
	if err != nil {
		return err
	}
	forkSessions, err := encodeSessions(c.ForkSessions)
	if err != nil {
		return err
	}
	t := now()
	if _, err := s.db.ExecContext(ctx, queryInsertChat, c.ID, c.Title, c.Agent, c.Model, c.Effort,
		c.Mode, c.Project, c.Cwd, sessions, c.ForkPending, t, t, c.ForkedFrom, c.ForkSeq, forkSessions); err != nil {
		return fmt.Errorf("store: create chat %s: %w", c.ID, translate(err))
	}
	if c.Sessions == nil {
		c.Sessions = map[string]string{}
	}
	if c.ForkSessions == nil {
		c.ForkSessions = map[string]string{}
	}
	c.CreatedAt, c.UpdatedAt = t, t
	return nil
}

// GetChat returns the chat or ErrNotFound.
func (s *Store) GetChat(ctx context.Context, id string) (Chat, error) {
	var r chatRow
	if err := s.db.GetContext(ctx, &r, queryGetChat, id); err != nil {
		return Chat{}, fmt.Errorf("store: get chat %s: %w", id, translate(err))
	}
	return r.chat()
}

// ListChats returns up to limit chats, most recently updated first.
func (s *Store) ListChats(ctx context.Context, limit int) ([]Chat, error) {
	if limit <= 0 {
		limit = 100
	}
	var rows []chatRow
	if err := s.db.SelectContext(ctx, &rows, queryListChats, limit); err != nil {
		return nil, fmt.Errorf("store: list chats: %w", translate(err))
	}
	out := make([]Chat, 0, len(rows))
	for _, r := range rows {
		c, err := r.chat()
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// ChatsByPrefix returns the ids of up to limit chats whose id starts with
// prefix (case-sensitive), sorted bytewise; none is an empty list, not an
// error.
func (s *Store) ChatsByPrefix(ctx context.Context, prefix string, limit int) ([]string, error) {
	if limit <= 0 {
		limit = 100
	}
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, queryChatsByPrefix, utf8.RuneCountInString(prefix), prefix, limit); err != nil {
		return nil, fmt.Errorf("store: chats by prefix %q: %w", prefix, translate(err))
	}
	slices.Sort(ids) // the same order in both dialects, whatever Postgres's collation
	return ids, nil
}

// UpdateChat writes the settings fields of c (title, agent, model, effort, mode,
// project, cwd, fork_pending). Sessions are changed only through SetSession.
func (s *Store) UpdateChat(ctx context.Context, c Chat) error {
	res, err := s.db.ExecContext(ctx, queryUpdateChat, c.ID, c.Title, c.Agent, c.Model, c.Effort,
		c.Mode, c.Project, c.Cwd, c.ForkPending, now())
	if err != nil {
		return fmt.Errorf("store: update chat %s: %w", c.ID, translate(err))
	}
	return expectOne(res, "update chat "+c.ID)
}

// SetSession records provider's native session id for the chat and clears
// fork_pending. An empty sessionID deletes the provider's entry.
func (s *Store) SetSession(ctx context.Context, chatID, provider, sessionID string) error {
	lock := ""
	if s.dialect == DialectPostgres {
		lock = " FOR UPDATE"
	}
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		var raw string
		if err := tx.GetContext(ctx, &raw, queryChatSessions+lock, chatID); err != nil {
			return translate(err)
		}
		m := map[string]string{}
		if raw != "" {
			if err := json.Unmarshal([]byte(raw), &m); err != nil {
				return fmt.Errorf("sessions: %w", err)
			}
		}
		if sessionID == "" {
			delete(m, provider)
		} else {
			m[provider] = sessionID
		}
		enc, err := encodeSessions(m)
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, querySetSessions, chatID, enc, now())
		return translate(err)
	})
	if err != nil {
		return fmt.Errorf("store: set session of chat %s: %w", chatID, err)
	}
	return nil
}

// DeleteChat removes the chat with its runs and events, or returns ErrNotFound.
func (s *Store) DeleteChat(ctx context.Context, id string) error {
	err := s.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, queryDeleteChatEvents, id); err != nil {
			return translate(err)
		}
		res, err := tx.ExecContext(ctx, queryDeleteChat, id) // runs cascade
		if err != nil {
			return translate(err)
		}
		if n, err := res.RowsAffected(); err == nil && n == 0 {
			return ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: delete chat %s: %w", id, err)
	}
	return nil
}
