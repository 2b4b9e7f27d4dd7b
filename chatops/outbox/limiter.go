// limiter.go: a rate budget shared beyond one outbox. Replicas over one
// database each run an outbox per workspace; a shared Limiter makes their
// calls draw on one budget (and a 429 seen by one pause all), while each
// outbox keeps its own scheduling (coalescing, priorities, MinInterval).

package outbox

import (
	"context"
	"errors"
	"fmt"
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
	KindStart  = "start"
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
	case opStart:
		return KindStart
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
// buckets (replicas sharing a workspace). The worker never waits long for
// l: one that fails or does not answer within sharedAnswer is left alone
// for sharedBreak (logged once, counted in Stats), the outbox going on
// within its own buckets meanwhile, and pauses are told to l in the
// background.
func WithLimiter(l Limiter, key string) Option {
	return func(o *Outbox) { o.shared, o.sharedKey = l, key }
}

const (
	// sharedAnswer is how long the worker waits for the shared limiter's
	// answer before the call goes within the outbox's own buckets: a
	// database that does not answer holds up a workspace no longer. It is
	// well above a loaded database's slow answers (a take answered in 1 s
	// is still the budget the replicas share; going without it then is
	// what makes a 429 storm), and once it passes the breaker spares the
	// worker the wait for sharedBreak.
	sharedAnswer = 3 * time.Second
	// sharedTimeout is the context deadline of one question to the shared
	// limiter. Its driver may not honour it (lib/pq's cancel does not
	// unblock a read on a stalled connection), so the worker does not wait
	// for it: it bounds the question, not the worker.
	sharedTimeout = 5 * time.Second
	// sharedBreak is how long a shared limiter that failed or did not
	// answer in time is left alone before it is asked again.
	sharedBreak = 30 * time.Second
)

// errNoAnswer is a shared limiter that did not answer within sharedAnswer.
var errNoAnswer = errors.New("outbox: shared rate limit did not answer")

// sharedReply is the shared limiter's answer to a take.
type sharedReply struct {
	wait time.Duration
	err  error
}

// takeShared asks the shared limiter for a token of op, waiting at most
// o.sharedAnswer; on a wait it records when op's kind may ask again and
// reports false (false also when ctx ends). It asks nothing while the
// breaker is open or an earlier question is still unanswered (at most one
// is in flight): the call goes within the outbox's own buckets. Run's
// goroutine only; o.mu is not held.
func (o *Outbox) takeShared(ctx context.Context, op opKind) bool {
	if o.shared == nil || op == opNone {
		return true
	}
	if o.asking != nil {
		select {
		case <-o.asking:
			o.asking = nil // answered late: its call went without it
		default:
		}
	}
	o.mu.Lock()
	skip := o.asking != nil || time.Now().Before(o.sharedOff)
	if skip {
		o.stats.SharedSkips++
	}
	o.mu.Unlock()
	if skip {
		return true
	}
	r := o.buckets[op].rate // immutable after New
	answer := make(chan sharedReply, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, sharedTimeout)
		defer cancel()
		wait, err := o.shared.Take(cctx, o.sharedKey, op.name(), r.PerMinute, r.Burst)
		answer <- sharedReply{wait, err}
	}()
	t := time.NewTimer(o.sharedAnswer)
	defer t.Stop()
	var a sharedReply
	select {
	case a = <-answer:
	case <-t.C:
		o.asking = answer
		a.err = fmt.Errorf("%w in %s", errNoAnswer, o.sharedAnswer)
	case <-ctx.Done():
		o.asking = answer
		return false
	}
	if a.err != nil {
		if ctx.Err() != nil {
			return false
		}
		o.sharedFailed(ctx, "take "+op.name(), a.err, true)
		return true
	}
	o.sharedBack(ctx)
	if a.wait <= 0 {
		return true
	}
	o.mu.Lock()
	o.sharedReady[op] = later(o.sharedReady[op], time.Now().Add(a.wait))
	o.stats.SharedWaits++
	o.mu.Unlock()
	return false
}

// sharedFailed opens the breaker: the shared limiter is left alone for
// o.sharedBreak. An outage is logged once, when it begins; skipped counts
// the call that goes without the limiter's token. o.mu is not held.
func (o *Outbox) sharedFailed(ctx context.Context, what string, err error, skipped bool) {
	o.mu.Lock()
	o.stats.SharedFailures++
	if skipped {
		o.stats.SharedSkips++
	}
	o.sharedOff = time.Now().Add(o.sharedBreak)
	first := !o.sharedDown
	o.sharedDown = true
	o.mu.Unlock()
	if first {
		o.log.WarnContext(ctx, "shared rate limit unavailable, going on within this replica's budget",
			"what", what, "retry_in", o.sharedBreak, "err", err)
	}
}

// sharedBack ends an outage: the shared limiter answered. o.mu is not held.
func (o *Outbox) sharedBack(ctx context.Context) {
	o.mu.Lock()
	was := o.sharedDown
	o.sharedDown = false
	o.mu.Unlock()
	if was {
		o.log.InfoContext(ctx, "shared rate limit answering again")
	}
}

// pauseShared tells the shared limiter of a 429 in the background: the
// worker goes on meanwhile. At most one pause is in flight; later ones
// while it is wait for it, the longest of them sent next. o.mu is not held.
func (o *Outbox) pauseShared(ctx context.Context, until time.Time) {
	if o.shared == nil {
		return
	}
	o.mu.Lock()
	o.pauseWant = later(o.pauseWant, until)
	busy := o.pausing
	o.pausing = true
	o.mu.Unlock()
	if !busy {
		go o.sendPauses(context.WithoutCancel(ctx))
	}
}

// sendPauses sends the pauses pauseShared asks for until none is newer
// than the last sent.
func (o *Outbox) sendPauses(ctx context.Context) {
	var sent time.Time
	for {
		o.mu.Lock()
		until := o.pauseWant
		if !until.After(sent) {
			o.pausing = false
			o.mu.Unlock()
			return
		}
		o.mu.Unlock()
		sent = until
		d := time.Until(until)
		if d <= 0 {
			continue // over already
		}
		cctx, cancel := context.WithTimeout(ctx, sharedTimeout)
		err := o.shared.Pause(cctx, o.sharedKey, d)
		cancel()
		if err != nil {
			o.sharedFailed(ctx, "pause", err, false)
			continue
		}
		o.sharedBack(ctx)
	}
}

// readyAt is when a call of op may go: its own bucket has a token, the
// shared limiter's last wait for its kind is over and, for a status, a
// 429 on one is over. o.mu is held.
func (o *Outbox) readyAt(op opKind, now time.Time) time.Time {
	at := later(o.buckets[op].ready(now), o.sharedReady[op])
	if op == opStatus {
		at = later(at, o.statusPaused)
	}
	return at
}
