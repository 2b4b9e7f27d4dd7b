// queue.go: the busy queue (migration 0007): prompts waiting in a thread for
// its chat's running turn to end, with their images, so that a restart
// forgets none.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

const (
	queuedColumns = `id, chat_id, platform, workspace, channel, thread, pos, message_id, sender, text, files, sent_at, created_at`

	queryInsertQueued = `INSERT INTO queued_prompts (` + queuedColumns + `)
SELECT $1, $2, $3, $4, $5, $6, COALESCE(MAX(pos), 0) + 1, $7, $8, $9, $10, $11, $12 FROM queued_prompts
WHERE platform = $3 AND workspace = $4 AND channel = $5 AND thread = $6`
	queryInsertQueuedImage = `INSERT INTO queued_images (prompt_id, idx, media_type, name, data) VALUES ($1, $2, $3, $4, $5)`
	queryQueuedOfPlatform  = `SELECT ` + queuedColumns + ` FROM queued_prompts WHERE platform = $1
ORDER BY workspace, channel, thread, pos, created_at, id`
	queryQueuedOfThread = `SELECT ` + queuedColumns + ` FROM queued_prompts
WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4 ORDER BY pos, created_at, id`
	queryQueuedImages = `SELECT prompt_id, idx, media_type, name, data FROM queued_images WHERE prompt_id = $1 ORDER BY idx`
	queryDeleteQueued = `DELETE FROM queued_prompts WHERE id = $1`
	queryClearQueued  = `DELETE FROM queued_prompts WHERE platform = $1 AND workspace = $2 AND channel = $3 AND thread = $4`
	queryQueuedFirst  = `UPDATE queued_prompts SET pos = (SELECT MIN(q.pos) - 1 FROM queued_prompts q
WHERE q.platform = $2 AND q.workspace = $3 AND q.channel = $4 AND q.thread = $5)
WHERE id = $1 AND platform = $2 AND workspace = $3 AND channel = $4 AND thread = $5`
)

// QueuedPrompt is a row of queued_prompts with its images: a message that
// waits in a thread for the chat's running turn to end.
type QueuedPrompt struct {
	ID     string
	ChatID string
	ThreadRef
	// MessageID is the platform message the prompt came in (for reactions).
	MessageID string
	// Sender is the platform-qualified user ("slack:U1").
	Sender string
	// Text is the prompt as the agent gets it (saved files named in it).
	Text string
	// Files are the names of the files saved for it, for display.
	Files  []string
	Images []QueuedImage
	// Sent is when the platform received the message (zero when unknown).
	Sent      time.Time
	CreatedAt time.Time
}

// QueuedImage is an image a queued prompt carries.
type QueuedImage struct {
	MediaType string
	Name      string
	Data      []byte
}

type queuedRow struct {
	ID        string       `db:"id"`
	ChatID    string       `db:"chat_id"`
	Platform  string       `db:"platform"`
	Workspace string       `db:"workspace"`
	Channel   string       `db:"channel"`
	Thread    string       `db:"thread"`
	Pos       int64        `db:"pos"`
	MessageID string       `db:"message_id"`
	Sender    string       `db:"sender"`
	Text      string       `db:"text"`
	Files     string       `db:"files"`
	SentAt    sql.NullTime `db:"sent_at"`
	CreatedAt time.Time    `db:"created_at"`
}

type queuedImageRow struct {
	PromptID  string `db:"prompt_id"`
	Idx       int    `db:"idx"`
	MediaType string `db:"media_type"`
	Name      string `db:"name"`
	Data      []byte `db:"data"`
}

// EnqueuePrompt appends q to its thread's queue (after every prompt queued
// there), with its images, in one transaction. A missing chat is
// ErrNotFound; an existing id is ErrConflict.
func (s *Store) EnqueuePrompt(ctx context.Context, q QueuedPrompt) error {
	files, err := json.Marshal(append([]string{}, q.Files...))
	if err != nil {
		return fmt.Errorf("store: queue prompt %s: files: %w", q.ID, err)
	}
	var sent sql.NullTime
	if !q.Sent.IsZero() {
		sent = sql.NullTime{Time: q.Sent.UTC(), Valid: true}
	}
	p := q.ThreadRef
	err = s.InTx(ctx, func(tx *sqlx.Tx) error {
		if _, err := tx.ExecContext(ctx, queryInsertQueued, q.ID, q.ChatID, p.Platform, p.Workspace, p.Channel, p.Thread,
			q.MessageID, q.Sender, q.Text, string(files), sent, now()); err != nil {
			if isFKViolation(err) {
				return fmt.Errorf("chat %s: %w", q.ChatID, ErrNotFound)
			}
			return translate(err)
		}
		for i, im := range q.Images {
			data := im.Data
			if data == nil {
				data = []byte{}
			}
			if _, err := tx.ExecContext(ctx, queryInsertQueuedImage, q.ID, i, im.MediaType, im.Name, data); err != nil {
				return translate(err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: queue prompt %s in %s: %w", q.ID, p, err)
	}
	return nil
}

// QueuedPrompts returns every prompt queued in the platform's threads, each
// thread's in queue order, with their images.
func (s *Store) QueuedPrompts(ctx context.Context, platform string) ([]QueuedPrompt, error) {
	out, err := s.selectQueued(ctx, queryQueuedOfPlatform, platform)
	if err != nil {
		return nil, fmt.Errorf("store: queued prompts of %s: %w", platform, err)
	}
	return out, nil
}

// QueuedPromptsOf returns the thread's queued prompts in queue order, with
// their images.
func (s *Store) QueuedPromptsOf(ctx context.Context, p ThreadRef) ([]QueuedPrompt, error) {
	out, err := s.selectQueued(ctx, queryQueuedOfThread, p.Platform, p.Workspace, p.Channel, p.Thread)
	if err != nil {
		return nil, fmt.Errorf("store: queued prompts of %s: %w", p, err)
	}
	return out, nil
}

func (s *Store) selectQueued(ctx context.Context, q string, args ...any) ([]QueuedPrompt, error) {
	var rows []queuedRow
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, translate(err)
	}
	out := make([]QueuedPrompt, 0, len(rows))
	for _, r := range rows {
		qp := QueuedPrompt{
			ID: r.ID, ChatID: r.ChatID,
			ThreadRef: ThreadRef{Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Thread: r.Thread},
			MessageID: r.MessageID, Sender: r.Sender, Text: r.Text, CreatedAt: r.CreatedAt.UTC(),
		}
		if r.SentAt.Valid {
			qp.Sent = r.SentAt.Time.UTC()
		}
		if err := json.Unmarshal([]byte(r.Files), &qp.Files); err != nil {
			return nil, fmt.Errorf("queued prompt %s files: %w", r.ID, err)
		}
		var ims []queuedImageRow
		if err := s.db.SelectContext(ctx, &ims, queryQueuedImages, r.ID); err != nil {
			return nil, translate(err)
		}
		for _, im := range ims {
			qp.Images = append(qp.Images, QueuedImage{MediaType: im.MediaType, Name: im.Name, Data: im.Data})
		}
		out = append(out, qp)
	}
	return out, nil
}

// DeleteQueuedPrompt removes a queued prompt (it started, or was dropped)
// with its images. A missing id is ErrNotFound.
func (s *Store) DeleteQueuedPrompt(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, queryDeleteQueued, id)
	if err != nil {
		return fmt.Errorf("store: delete queued prompt %s: %w", id, translate(err))
	}
	return expectOne(res, "delete queued prompt "+id)
}

// ClearQueue removes every prompt queued in the thread and returns how many
// there were.
func (s *Store) ClearQueue(ctx context.Context, p ThreadRef) (int64, error) {
	res, err := s.db.ExecContext(ctx, queryClearQueued, p.Platform, p.Workspace, p.Channel, p.Thread)
	if err != nil {
		return 0, fmt.Errorf("store: clear the queue of %s: %w", p, translate(err))
	}
	return res.RowsAffected()
}

// QueuePromptFirst moves the queued prompt id to the head of its thread's
// queue. An id not queued in the thread is ErrNotFound.
func (s *Store) QueuePromptFirst(ctx context.Context, p ThreadRef, id string) error {
	res, err := s.db.ExecContext(ctx, queryQueuedFirst, id, p.Platform, p.Workspace, p.Channel, p.Thread)
	if err != nil {
		return fmt.Errorf("store: move queued prompt %s first: %w", id, translate(err))
	}
	return expectOne(res, "move queued prompt "+id+" first")
}
