// events.go: the chat_events log, the persistence behind runhub.
package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Event is a stored chat event (the run hub's type).
type Event = runhub.Event

// RunRecord is what StartRun records (the run hub's type).
type RunRecord = runhub.RunRecord

const (
	eventColumns = `chat_id, seq, run_id, type, payload, created_at`
	eventParams  = 6

	// queryEventsAfter reads the window ($2, $3] of seqs forwards: keyset
	// pagination on the (chat_id, seq) key, ORDER BY its order. Seqs have no gaps,
	// so the window holds the page; bounding it keeps a planner without
	// statistics (a fresh table: it estimates a handful of rows and picks a
	// bitmap scan and a sort) from sorting all the rest of the chat for every
	// page, which made a replay quadratic.
	queryEventsAfter = `SELECT ` + eventColumns + ` FROM chat_events
WHERE chat_id = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`
	// queryEventsFrom is the unbounded page, read only after a window that came
	// back short: at the chat's end it finds nothing (or what was committed
	// since), past a hole the rest of the page.
	queryEventsFrom = `SELECT ` + eventColumns + ` FROM chat_events
WHERE chat_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	// queryEventsBefore reads the window [$3, $2) of seqs backwards. Seqs have
	// no gaps, so the window holds the page; bounding it keeps a planner without
	// statistics from sorting the whole chat to find the newest rows.
	queryEventsBefore = `SELECT ` + eventColumns + ` FROM chat_events
WHERE chat_id = $1 AND seq < $2 AND seq >= $3 ORDER BY seq DESC LIMIT $4`
	queryInsertEvent = `INSERT INTO chat_events (` + eventColumns + `) VALUES ($1, $2, $3, $4, $5, $6)`
	queryLastSeq     = `SELECT COALESCE(MAX(seq), 0) FROM chat_events WHERE chat_id = $1`
	// queryLastSeqsPG is queryLastSeq for many chats at once: one index lookup
	// per chat, whatever the statistics.
	queryLastSeqsPG = `SELECT c AS chat_id, COALESCE((SELECT MAX(seq) FROM chat_events WHERE chat_id = c), 0) AS seq
FROM unnest($1::text[]) AS c`

	// queryInsertEventsPG inserts any number of rows with six array parameters:
	// one short statement that Postgres parses and plans quickly, whatever the
	// batch size (a multi-row VALUES list is much slower to parse). Empty run ids
	// and payloads become NULL.
	queryInsertEventsPG = `INSERT INTO chat_events (` + eventColumns + `)
SELECT c, s, NULLIF(r, ''), t, NULLIF(p, ''), a
FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::timestamptz[]) AS e (c, s, r, t, p, a)`
)

type eventRow struct {
	ChatID    agent.ChatID   `db:"chat_id"`
	Seq       int64          `db:"seq"`
	RunID     sql.NullString `db:"run_id"`
	Type      string         `db:"type"`
	Payload   sql.NullString `db:"payload"`
	CreatedAt time.Time      `db:"created_at"`
}

func eventArgs(events []Event, t time.Time) []any {
	args := make([]any, 0, len(events)*eventParams)
	for _, e := range events {
		var runID, payload sql.NullString
		if e.RunID != "" {
			runID = sql.NullString{String: string(e.RunID), Valid: true}
		}
		if len(e.Payload) > 0 {
			payload = sql.NullString{String: string(e.Payload), Valid: true}
		}
		at := e.At.UTC()
		if e.At.IsZero() {
			at = t
		}
		args = append(args, e.ChatID, e.Seq, runID, e.Type, payload, at)
	}
	return args
}

// eventArrays returns the six array parameters of queryInsertEventsPG.
func eventArrays(events []Event, t time.Time) []any {
	n := len(events)
	chats, runs, types, payloads, ats := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	seqs := make([]int64, n)
	for i, e := range events {
		at := e.At
		if at.IsZero() {
			at = t
		}
		chats[i], seqs[i], runs[i], types[i], payloads[i] = string(e.ChatID), e.Seq, string(e.RunID), e.Type, string(e.Payload)
		ats[i] = at.UTC().Format(time.RFC3339Nano)
	}
	return []any{pq.StringArray(chats), pq.Int64Array(seqs), pq.StringArray(runs), pq.StringArray(types),
		pq.StringArray(payloads), pq.StringArray(ats)}
}

// AppendEvents stores events all-or-nothing in one statement or transaction: on
// Postgres one INSERT ... SELECT FROM unnest(arrays), on SQLite one prepared
// one-row INSERT executed per event in one transaction. A (chat, seq) that already exists, or appears twice in events, is
// ErrConflict and nothing of the batch is stored; a missing chat is ErrNotFound.
func (s *Store) AppendEvents(ctx context.Context, events []Event) error {
	if len(events) == 0 {
		return nil
	}
	t := now()
	var err error
	if s.dialect == DialectPostgres && len(events) > 1 {
		_, err = s.insertPG(ctx, eventArrays(events, t))
	} else if s.dialect == DialectSQLite && len(events) > 1 {
		// A one-row statement prepared once per batch: parsing a multi-row
		// VALUES list of each new length cost SQLite 3x the CPU per event.
		err = s.InTx(ctx, func(tx *sqlx.Tx) error {
			st, err := tx.PrepareContext(ctx, queryInsertEvent)
			if err != nil {
				return err
			}
			defer func() { _ = st.Close() }()
			for _, e := range events {
				if _, err := st.ExecContext(ctx, eventArgs([]Event{e}, t)...); err != nil {
					return err
				}
			}
			return nil
		})
	} else {
		// One event: one statement is atomic on its own, no BEGIN/COMMIT.
		_, err = s.db.ExecContext(ctx, queryInsertEvent, eventArgs(events, t)...)
	}
	if err != nil {
		if isFKViolation(err) {
			return fmt.Errorf("store: append %d events: chat: %w", len(events), ErrNotFound)
		}
		return fmt.Errorf("store: append %d events: %w", len(events), translate(err))
	}
	return nil
}

// EventsAfter returns up to limit events of the chat with seq > afterSeq, by seq.
// It reads the window of the limit seqs above afterSeq, and on from its last row
// only if that window came back short (the chat's end, a hole, or a commit
// landing meanwhile).
func (s *Store) EventsAfter(ctx context.Context, chatID agent.ChatID, afterSeq int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	var rows []eventRow
	to := afterSeq + int64(limit)
	if err := s.db.SelectContext(ctx, &rows, queryEventsAfter, chatID, afterSeq, to, limit); err != nil {
		return nil, fmt.Errorf("store: events of chat %s after %d: %w", chatID, afterSeq, translate(err))
	}
	if len(rows) < limit {
		// Go on from the last row read, not from the window's end: a commit
		// between the two queries may have filled the window since.
		from := afterSeq
		if len(rows) > 0 {
			from = rows[len(rows)-1].Seq
		}
		var more []eventRow
		if err := s.db.SelectContext(ctx, &more, queryEventsFrom, chatID, from, limit-len(rows)); err != nil {
			return nil, fmt.Errorf("store: events of chat %s after %d: %w", chatID, from, translate(err))
		}
		rows = append(rows, more...)
	}
	return eventsOf(rows), nil
}

// EventsBefore returns up to limit events of the chat with seq < beforeSeq,
// newest first; beforeSeq <= 0 reads from the end. It reads the window of the
// limit seqs below beforeSeq, and further back only if that window had a hole.
func (s *Store) EventsBefore(ctx context.Context, chatID agent.ChatID, beforeSeq int64, limit int) ([]Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	if beforeSeq <= 0 {
		last, err := s.LastSeq(ctx, chatID)
		if err != nil {
			return nil, err
		}
		beforeSeq = last + 1
	}
	var out []Event
	for beforeSeq > 1 && len(out) < limit {
		n := limit - len(out)
		from := max(beforeSeq-int64(n), 1)
		var rows []eventRow
		if err := s.db.SelectContext(ctx, &rows, queryEventsBefore, chatID, beforeSeq, from, n); err != nil {
			return nil, fmt.Errorf("store: events of chat %s before %d: %w", chatID, beforeSeq, translate(err))
		}
		out = append(out, eventsOf(rows)...)
		beforeSeq = from
	}
	return out, nil
}

func eventsOf(rows []eventRow) []Event {
	out := make([]Event, len(rows))
	for i, r := range rows {
		out[i] = Event{ChatID: r.ChatID, Seq: r.Seq, RunID: agent.RunID(r.RunID.String), Type: r.Type, At: r.CreatedAt.UTC()}
		if r.Payload.Valid {
			out[i].Payload = json.RawMessage(r.Payload.String)
		}
	}
	return out
}

// LastSeq returns the chat's highest stored seq, 0 when it has no events.
func (s *Store) LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error) {
	var seq int64
	if err := s.db.GetContext(ctx, &seq, queryLastSeq, chatID); err != nil {
		return 0, fmt.Errorf("store: last seq of chat %s: %w", chatID, translate(err))
	}
	return seq, nil
}

// LastSeqs returns the highest stored seq of each of the chats (0 for a chat
// without events): one query on Postgres, one per chat on SQLite.
func (s *Store) LastSeqs(ctx context.Context, chatIDs []agent.ChatID) (map[agent.ChatID]int64, error) {
	out := make(map[agent.ChatID]int64, len(chatIDs))
	if s.dialect != DialectPostgres {
		for _, c := range chatIDs {
			seq, err := s.LastSeq(ctx, c)
			if err != nil {
				return nil, err
			}
			out[c] = seq
		}
		return out, nil
	}
	var rows []struct {
		ChatID agent.ChatID `db:"chat_id"`
		Seq    int64        `db:"seq"`
	}
	ids := make(pq.StringArray, len(chatIDs))
	for i, c := range chatIDs {
		ids[i] = string(c)
	}
	if err := s.db.SelectContext(ctx, &rows, queryLastSeqsPG, ids); err != nil {
		return nil, fmt.Errorf("store: last seqs of %d chats: %w", len(chatIDs), translate(err))
	}
	for _, r := range rows {
		out[r.ChatID] = r.Seq
	}
	return out, nil
}

// insertPG runs queryInsertEventsPG as a prepared statement (prepared on first
// use; database/sql re-prepares it per connection), saving Postgres a parse and
// plan per commit.
func (s *Store) insertPG(ctx context.Context, args []any) (sql.Result, error) {
	s.insertOnce.Do(func() {
		s.insertStmt, s.insertErr = s.db.PrepareContext(context.WithoutCancel(ctx), queryInsertEventsPG)
	})
	if s.insertErr != nil {
		return s.db.ExecContext(ctx, queryInsertEventsPG, args...)
	}
	return s.insertStmt.ExecContext(ctx, args...)
}
