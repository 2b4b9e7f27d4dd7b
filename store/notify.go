// notify.go: LISTEN/NOTIFY between replicas sharing one Postgres database, the
// transport of prompt.Router (answers and cancels that land on a replica other
// than the run's owner). SQLite is single-process: it has no router.
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lib/pq"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Errors of the Router.
var (
	// ErrNoNotify is returned by NewRouter on a backend without LISTEN/NOTIFY (SQLite).
	ErrNoNotify = errors.New("store: LISTEN/NOTIFY needs Postgres")
	// ErrPayloadTooLarge is returned by Publish for a payload over MaxNotifyPayload.
	ErrPayloadTooLarge = errors.New("store: notify payload too large")
)

// MaxNotifyPayload is the largest payload Publish sends (Postgres refuses
// 8000 bytes and more by default).
const MaxNotifyPayload = 7999

const (
	queryNotify       = `SELECT pg_notify($1, $2)`
	querySchema       = `SELECT current_schema()`
	queryRunningOfRun = `SELECT id, owner FROM runs WHERE chat_id = $1 AND status = 'running'`
	listenerPing      = 30 * time.Second
)

// Router is LISTEN/NOTIFY over the store's Postgres database. Channels are
// namespaced by the connection's schema, so stores on different schemas of one
// database never hear each other. Notifications are at most once: one sent
// while the listening connection is down is lost (the listener reconnects).
type Router struct {
	st     *Store
	log    *slog.Logger
	prefix string
	l      *pq.Listener

	mu       sync.Mutex
	handlers map[string]func([]byte) // by Postgres channel
	closed   bool
	done     chan struct{}
}

// NewRouter opens the LISTEN connection. Close it before the Store.
func (s *Store) NewRouter(ctx context.Context, logger *slog.Logger) (*Router, error) {
	if s.dialect != DialectPostgres {
		return nil, ErrNoNotify
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var schema string
	if err := s.db.GetContext(ctx, &schema, querySchema); err != nil {
		return nil, fmt.Errorf("store: router: current schema: %w", translate(err))
	}
	r := &Router{st: s, log: logger, prefix: schema, handlers: map[string]func([]byte){}, done: make(chan struct{})}
	r.l = pq.NewListener(s.url, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, err error) {
		switch ev {
		case pq.ListenerEventDisconnected, pq.ListenerEventConnectionAttemptFailed:
			logger.Warn("router: listen connection lost", "err", err)
		case pq.ListenerEventReconnected:
			logger.Info("router: listen connection back; notifications sent meanwhile are lost")
		}
	})
	go r.dispatch()
	return r, nil
}

// channel maps a logical channel name to a Postgres channel of this schema
// (at most 63 bytes, a plain identifier).
func (r *Router) channel(name string) string {
	h := sha256.Sum256([]byte(r.prefix + "\x00" + name))
	return "tl_" + hex.EncodeToString(h[:20])
}

// Publish sends payload to whoever listens on channel now (NOTIFY; delivered
// when the sending transaction commits, at most once).
func (r *Router) Publish(ctx context.Context, channel string, payload []byte) error {
	if len(payload) > MaxNotifyPayload {
		return fmt.Errorf("store: notify %s: %d bytes: %w", channel, len(payload), ErrPayloadTooLarge)
	}
	if _, err := r.st.db.ExecContext(ctx, queryNotify, r.channel(channel), string(payload)); err != nil {
		return fmt.Errorf("store: notify %s: %w", channel, translate(err))
	}
	return nil
}

// Listen calls handle with every payload published on channel until ctx ends,
// one at a time on the router's goroutine (handle must not block for long). It
// returns once the LISTEN is in place. One handler per channel.
func (r *Router) Listen(ctx context.Context, channel string, handle func(payload []byte)) error {
	pgc := r.channel(channel)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return errors.New("store: router closed")
	}
	if _, dup := r.handlers[pgc]; dup {
		r.mu.Unlock()
		return fmt.Errorf("store: listen %s: already listening", channel)
	}
	r.handlers[pgc] = handle
	r.mu.Unlock()
	if err := r.l.Listen(pgc); err != nil {
		r.drop(pgc)
		return fmt.Errorf("store: listen %s: %w", channel, err)
	}
	context.AfterFunc(ctx, func() {
		r.drop(pgc)
		if err := r.l.Unlisten(pgc); err != nil && !r.isClosed() {
			r.log.Warn("router: unlisten", logkey.Channel, channel, "err", err)
		}
	})
	return nil
}

func (r *Router) drop(pgc string) {
	r.mu.Lock()
	delete(r.handlers, pgc)
	r.mu.Unlock()
}

func (r *Router) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

func (r *Router) dispatch() {
	defer close(r.done)
	ping := time.NewTicker(listenerPing)
	defer ping.Stop()
	for {
		select {
		case n, ok := <-r.l.NotificationChannel():
			if !ok {
				return
			}
			if n == nil { // reconnected
				continue
			}
			r.mu.Lock()
			h := r.handlers[n.Channel]
			r.mu.Unlock()
			if h != nil {
				h([]byte(n.Extra))
			}
		case <-ping.C:
			// Detects a dead connection that no read would notice.
			go func() { _ = r.l.Ping() }()
		}
	}
}

// Close stops listening. Publish keeps working until the Store is closed.
func (r *Router) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	err := r.l.Close()
	<-r.done
	return err
}

// RunOwner returns the chat's running run and the replica that owns it, both
// empty when the chat has none.
func (r *Router) RunOwner(ctx context.Context, chatID agent.ChatID) (runID agent.RunID, owner string, err error) {
	var row struct {
		ID    agent.RunID `db:"id"`
		Owner string      `db:"owner"`
	}
	err = r.st.db.GetContext(ctx, &row, queryRunningOfRun, chatID)
	if err != nil {
		if err = translate(err); errors.Is(err, ErrNotFound) {
			return "", "", nil
		}
		return "", "", fmt.Errorf("store: running run of chat %s: %w", chatID, err)
	}
	return row.ID, row.Owner, nil
}
