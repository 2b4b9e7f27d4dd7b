// limiter.go: a rate budget shared beyond one outbox. Replicas over one
// database each run an outbox per workspace; a shared Limiter makes their
// calls draw on one budget (and a 429 seen by one pause all), while each
// outbox keeps its own scheduling (coalescing, priorities, MinInterval).

package outbox

import (
	"context"
	"time"
)

// Limiter is a workspace budget kept outside this process (store.RateLimits
// on Postgres): every outbox sending for the workspace asks it before each
// call. Without one, an outbox's own buckets are the whole budget.
type Limiter interface {
	// Take takes a token of kind (one of the Kind names) for the budget
	// key (platform and workspace), created with perMinute and burst on
	// first use. It returns 0 when taken, else how long to wait before
	// asking again (nothing taken).
	Take(ctx context.Context, key, kind string, perMinute float64, burst int) (time.Duration, error)
	// Pause stops every taker of key for d (the platform said 429 with
	// Retry-After d): Take answers a wait until then, whatever the kind.
	Pause(ctx context.Context, key string, d time.Duration) error
}

// Kind names of the calls a Limiter counts, one bucket each (Budget's fields).
const (
	KindPost   = "post"
	KindUpdate = "update"
	KindAppend = "append"
	KindStop   = "stop"
	KindDelete = "delete"
	KindStatus = "status"
)

func (k opKind) name() string {
	switch k {
	case opPost:
		return KindPost
	case opUpdate:
		return KindUpdate
	case opAppend:
		return KindAppend
	case opStop:
		return KindStop
	case opDelete:
		return KindDelete
	case opStatus:
		return KindStatus
	}
	return ""
}

// Option configures an Outbox.
type Option func(*Outbox)

// WithLimiter makes the outbox draw on l's budget key besides its own
// buckets (replicas sharing a workspace). A failing l is logged and the
// outbox goes on within its own buckets.
func WithLimiter(l Limiter, key string) Option {
	return func(o *Outbox) { o.shared, o.sharedKey = l, key }
}

// sharedTimeout bounds one question to the shared limiter.
const sharedTimeout = 5 * time.Second

// takeShared asks the shared limiter for a token of op; on a wait it
// records when op's kind may ask again and reports false. o.mu is not held.
func (o *Outbox) takeShared(ctx context.Context, op opKind) bool {
	if o.shared == nil || op == opNone {
		return true
	}
	r := o.buckets[op].rate // immutable after New
	cctx, cancel := context.WithTimeout(ctx, sharedTimeout)
	wait, err := o.shared.Take(cctx, o.sharedKey, op.name(), r.PerMinute, r.Burst)
	cancel()
	if err != nil {
		if ctx.Err() == nil && time.Since(o.sharedWarned) > time.Minute {
			o.sharedWarned = time.Now() // once a minute, not once a call
			o.log.WarnContext(ctx, "shared rate limit unavailable, going on within this replica's budget", "kind", op.name(), "err", err)
		}
		return true
	}
	if wait <= 0 {
		return true
	}
	o.mu.Lock()
	o.sharedReady[op] = later(o.sharedReady[op], time.Now().Add(wait))
	o.stats.SharedWaits++
	o.mu.Unlock()
	return false
}

// pauseShared tells the shared limiter of a 429. o.mu is not held.
func (o *Outbox) pauseShared(ctx context.Context, until time.Time) {
	if o.shared == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedTimeout)
	defer cancel()
	if err := o.shared.Pause(cctx, o.sharedKey, time.Until(until)); err != nil {
		o.log.WarnContext(ctx, "shared rate limit: pause not shared", "err", err)
	}
}

// readyAt is when a call of op may go: its own bucket has a token and the
// shared limiter's last wait for its kind is over. o.mu is held.
func (o *Outbox) readyAt(op opKind, now time.Time) time.Time {
	return later(o.buckets[op].ready(now), o.sharedReady[op])
}
