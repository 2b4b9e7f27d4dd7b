// ratelimit.go: token buckets in Postgres, shared by the replicas over one
// database, so that N replicas spend one chat workspace's rate budget, not N
// (the outbox's Limiter; chatops/outbox/limiter.go). Each take is one atomic
// statement that refills the bucket by the database's clock and takes a
// token if there is one; a pause after a 429 holds every kind of the bucket.

package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrNoSharedLimits is returned by RateLimits on SQLite (one process: its
// outboxes' own buckets are the whole budget).
var ErrNoSharedLimits = errors.New("store: shared rate limits need Postgres")

// RateLimits is the shared token buckets (table rate_limits, migration 0010).
type RateLimits struct{ st *Store }

// RateLimits returns the store's shared rate limits; ErrNoSharedLimits on
// SQLite.
func (s *Store) RateLimits() (*RateLimits, error) {
	if s.dialect != DialectPostgres {
		return nil, ErrNoSharedLimits
	}
	return &RateLimits{st: s}, nil
}

// pauseKind is the kind of a bucket's pause row.
const pauseKind = ""

// queryTakeToken refills bucket $1's kind $2 (burst $3, $4 tokens a second)
// to the database's clock and takes a token unless there is none or the
// bucket is paused. A first take creates the row full.
//
// The row lock makes concurrent takers of one bucket wait for each other;
// everything a take decides is computed in the DO UPDATE's sub-select, which
// runs once that lock is held:
//   - the clock is read there once (clock_timestamp, not the statement's
//     start, so a taker that waited counts no time twice), and the refill,
//     the grant and refilled_at all use that one reading;
//   - refilled_at is always set to it, and time before refilled_at counts as
//     none: if the clock steps back (or a failover reaches a server behind),
//     the bucket refills again from then on instead of freezing until the
//     clock catches up;
//   - the pause row is read FOR SHARE, which in READ COMMITTED gives its
//     newest committed version, so a pause committed while the take waited
//     for its row holds it (a plain read would see the statement's snapshot).
//     The pause seen is kept in the kind's row (paused_until) for RETURNING.
//
// (A workspace's very first pause, inserting the pause row while a take
// waits, is not seen by that take: the row is not in its snapshot.)
const queryTakeToken = `
INSERT INTO rate_limits AS b (bucket, kind, tokens, refilled_at, paused_until, granted)
SELECT $1, $2, $3::float8 - CASE WHEN p.paused THEN 0 ELSE 1 END, c.now, p.until, NOT p.paused
FROM (SELECT clock_timestamp() AS now) c
CROSS JOIN LATERAL (
    SELECT u.until, coalesce(u.until > c.now, false) AS paused
    FROM (SELECT (SELECT paused_until FROM rate_limits WHERE bucket = $1 AND kind = '') AS until OFFSET 0) u
) p
ON CONFLICT (bucket, kind) DO UPDATE SET (tokens, granted, refilled_at, paused_until) = (
    SELECT g.avail - CASE WHEN g.ok THEN 1 ELSE 0 END, g.ok, g.now, g.until
    FROM (
        SELECT a.avail, c.now, q.until, a.avail >= 1 AND coalesce(q.until <= c.now, true) AS ok
        FROM (SELECT clock_timestamp() AS now) c
        CROSS JOIN LATERAL (SELECT least($3::float8, b.tokens + greatest(0, extract(epoch FROM c.now - b.refilled_at)::float8) * $4::float8) AS avail) a
        LEFT JOIN LATERAL (SELECT paused_until AS until FROM rate_limits p WHERE p.bucket = b.bucket AND p.kind = '' FOR SHARE) q ON true
    ) g
)
RETURNING granted, tokens, refilled_at, coalesce(paused_until, 'epoch'::timestamptz) AS paused_until`

// maxTakeWait bounds the wait Take answers: a rate so low that its next
// token is further away (or does not fit a time.Duration) asks again then.
const maxTakeWait = time.Hour

// queryPause holds bucket $1 for $2 seconds from the database's clock (a
// later pause only lengthens it).
const queryPause = `
INSERT INTO rate_limits AS b (bucket, kind, tokens, refilled_at, paused_until)
VALUES ($1, '', 0, clock_timestamp(), clock_timestamp() + make_interval(secs => $2::float8))
ON CONFLICT (bucket, kind) DO UPDATE SET paused_until = greatest(b.paused_until, excluded.paused_until)`

// Take takes a token of kind from bucket key (created with burst tokens and
// refilled at perMinute on first use; later calls' rates apply from then
// on). It returns 0 when it took one, else how long until one may be taken
// (the bucket refills, or its pause ends); nothing is taken then.
func (r *RateLimits) Take(ctx context.Context, key, kind string, perMinute float64, burst int) (time.Duration, error) {
	if kind == pauseKind || !(perMinute > 0) || math.IsInf(perMinute, 1) || burst < 1 {
		return 0, fmt.Errorf("store: rate limit %s/%q: invalid bucket (%g/min, burst %d)", key, kind, perMinute, burst)
	}
	var row struct {
		Granted     bool      `db:"granted"`
		Tokens      float64   `db:"tokens"`
		RefilledAt  time.Time `db:"refilled_at"`
		PausedUntil time.Time `db:"paused_until"`
	}
	if err := r.st.db.GetContext(ctx, &row, queryTakeToken, key, kind, float64(burst), perMinute/60); err != nil {
		return 0, fmt.Errorf("store: rate limit %s/%s: %w", key, kind, translate(err))
	}
	if row.Granted {
		return 0, nil
	}
	wait := maxTakeWait
	if secs := (1 - row.Tokens) / (perMinute / 60); secs < maxTakeWait.Seconds() {
		wait = time.Duration(secs * float64(time.Second))
	}
	if p := row.PausedUntil.Sub(row.RefilledAt); p > wait {
		wait = p
	}
	return max(wait, time.Millisecond), nil
}

// Pause holds every kind of bucket key for d: takes answer a wait until then.
func (r *RateLimits) Pause(ctx context.Context, key string, d time.Duration) error {
	if _, err := r.st.db.ExecContext(ctx, queryPause, key, d.Seconds()); err != nil {
		return fmt.Errorf("store: rate limit %s: pause: %w", key, translate(err))
	}
	return nil
}
