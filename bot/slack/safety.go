// lanes.go: the per-thread work queues (bounded, blocking with a log line when
// full, never dropping) and the safety net every handler runs under (a panic
// is logged with its stack and the person is told).

package slack

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/threadline-bot/threadline/chatops"
)

// Queue limits.
const (
	// laneDepth is how many jobs one thread's lane holds; a put beyond it waits.
	laneDepth = 64
	// jobTimeout bounds one job, so that a full lane always moves on.
	jobTimeout = 5 * time.Minute
	// stillWaiting spaces the log lines of a put that waits for room.
	stillWaiting = 10 * time.Second
)

// who is the person and thread an inbound request came from: the one told
// when its handling fails.
type who struct {
	place chatops.Place
	user  chatops.User
}

// job is one piece of a thread's work.
type job struct {
	who who
	run func(ctx context.Context)
}

// lane runs one thread's work in order. Its jobs and space are guarded by
// Bot.mu; space is closed (and replaced) each time a job leaves.
type lane struct {
	jobs   []job
	space  chan struct{}
	warned time.Time // the last "queue full" log line, to space them
}

// enqueue puts f on the key's lane: work of one key runs in order, different
// keys concurrently. When the lane is full it waits for room (logging), the
// backpressure of mautrix's portal loop, instead of dropping: a caller that
// reads Slack waits, so nothing it accepted is lost and the order holds. It
// returns false only when ctx ended first (the job was not queued).
//
// Socket Mode has one reader for every thread, so while one thread's lane is
// full the others wait too: at most until that lane's worker finishes a job,
// and each job is bounded by jobTimeout. Envelopes are acked only once queued,
// so a process that dies while waiting leaves them unacked and Slack delivers
// them again (repeats are dropped by event id).
func (b *Bot) enqueue(ctx context.Context, key string, w who, f func(ctx context.Context)) bool {
	var since time.Time
	tick := (<-chan time.Time)(nil)
	for {
		b.mu.Lock()
		l := b.lanes[key]
		if l == nil {
			l = &lane{space: make(chan struct{})}
			b.lanes[key] = l
			b.wg.Go(func() { b.drainLane(key, l) })
		}
		if len(l.jobs) < laneDepth {
			l.jobs = append(l.jobs, job{who: w, run: f})
			b.mu.Unlock()
			if !since.IsZero() {
				b.log.DebugContext(ctx, "slack thread queue had room again", "lane", key, "waited", time.Since(since).Round(time.Millisecond))
			}
			return true
		}
		space := l.space
		warn := time.Since(l.warned) >= stillWaiting
		if warn && since.IsZero() {
			l.warned = time.Now()
		}
		b.mu.Unlock()
		if since.IsZero() {
			since = time.Now()
			if warn {
				b.log.WarnContext(ctx, "slack thread queue full, waiting for room (backpressure)", "lane", key, "depth", laneDepth)
			}
			t := time.NewTicker(stillWaiting)
			defer t.Stop()
			tick = t.C
		}
		select {
		case <-space:
		case <-tick:
			b.log.WarnContext(ctx, "slack thread queue still full", "lane", key, "waited", time.Since(since).Round(time.Second))
		case <-ctx.Done():
			b.log.WarnContext(ctx, "gave up waiting for room in a slack thread queue", "lane", key, "err", ctx.Err())
			return false
		}
	}
}

// drainLane runs the lane's jobs until it is empty, then forgets it.
func (b *Bot) drainLane(key string, l *lane) {
	for {
		b.mu.Lock()
		if len(l.jobs) == 0 {
			delete(b.lanes, key)
			b.mu.Unlock()
			return
		}
		j := l.jobs[0]
		l.jobs[0] = job{}
		l.jobs = l.jobs[1:]
		close(l.space)
		l.space = make(chan struct{})
		b.mu.Unlock()
		b.runJob(key, j)
	}
}

// runJob runs one job under the safety net and jobTimeout.
func (b *Bot) runJob(key string, j job) {
	ctx, cancel := context.WithTimeout(b.base, jobTimeout)
	defer cancel()
	defer b.rescue(ctx, "slack work for "+key, func() who { return j.who })
	j.run(ctx)
}

// goSafely runs f in its own goroutine under the safety net.
func (b *Bot) goSafely(what string, w who, f func(ctx context.Context)) {
	b.wg.Go(func() {
		ctx, cancel := context.WithTimeout(b.base, jobTimeout)
		defer cancel()
		defer b.rescue(ctx, what, func() who { return w })
		f(ctx)
	})
}

// failureNote is what the person hears when handling their request panicked.
const failureNote = "Something went wrong on my side while handling that (an internal error; the details are in the bot's log). Please try again, and tell the operator if it keeps happening."

// rescue must be deferred directly: it turns a panic into an error log line
// with the stack (key "stack") and an ephemeral note to the person, found by
// whom (which may be nil, or panic itself).
func (b *Bot) rescue(ctx context.Context, what string, whom func() who) {
	if r := recover(); r != nil {
		b.panicked(ctx, what, r, whom)
	}
}

// panicked logs a recovered panic r with the stack and tells the person.
func (b *Bot) panicked(ctx context.Context, what string, r any, whom func() who) {
	b.panics.Add(1)
	b.log.ErrorContext(ctx, "slack handler panicked", "what", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if whom == nil {
		return
	}
	var w who
	func() {
		defer func() { _ = recover() }()
		w = whom()
	}()
	b.tellFailure(w)
}

// tellFailure shows failureNote to the person, in their thread, without
// holding up the caller.
func (b *Bot) tellFailure(w who) {
	if w.user.ID == "" || w.place.Channel == "" {
		return
	}
	b.wg.Go(func() {
		ctx, cancel := context.WithTimeout(b.base, 30*time.Second)
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				b.log.ErrorContext(ctx, "telling a user about a failure panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		if err := b.surface.Ephemeral(ctx, w.place, w.user, failureNote); err != nil {
			b.log.WarnContext(ctx, "tell a user their request failed", "channel", w.place.Channel, "user", w.user.ID, "err", err)
		}
	})
}

// Panics counts the handler panics the bot survived.
func (b *Bot) Panics() int64 { return b.panics.Load() }
