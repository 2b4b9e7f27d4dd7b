package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/chatops/outbox"
)

// limiter is a shared budget that answers each take of a kind with the
// next of its scripted waits (0 once they are used up) and records the
// takes and pauses.
type limiter struct {
	mu     sync.Mutex
	waits  map[string][]time.Duration
	takes  []take
	pauses []time.Duration
	err    error // every take fails so
}

type take struct {
	key, kind string
	perMinute float64
	burst     int
	at        time.Time
	wait      time.Duration
}

func (l *limiter) Take(_ context.Context, key, kind string, perMinute float64, burst int) (time.Duration, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var wait time.Duration
	if ws := l.waits[kind]; len(ws) > 0 {
		wait, l.waits[kind] = ws[0], ws[1:]
	}
	l.takes = append(l.takes, take{key, kind, perMinute, burst, time.Now(), wait})
	return wait, l.err
}

func (l *limiter) Pause(_ context.Context, _ string, d time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pauses = append(l.pauses, d)
	return nil
}

func (l *limiter) log() ([]take, []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]take(nil), l.takes...), append([]time.Duration(nil), l.pauses...)
}

// TestSharedLimiterWait: the outbox asks the shared limiter before each
// call; told to wait, it sends nothing of that kind until the wait is over
// and asks again, while a call of another kind goes meanwhile.
func TestSharedLimiterWait(t *testing.T) {
	const wait = 300 * time.Millisecond
	p := &platform{}
	l := &limiter{waits: map[string][]time.Duration{outbox.KindUpdate: {wait}}}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil, outbox.WithLimiter(l, "slack|T1"))
	o.Load([]outbox.Message{{RunID: "r1", Slot: "answer/0", ChatID: "c1", Place: place, MessageID: "m1", Hash: "old"}})
	o.Put("c1", "r1", place, 1, 2, answer(0, "edited", true)) // an update
	o.Put("c1", "r2", place, 1, 1, answer(0, "new", true))    // a post
	start(t, o)
	flush(t, o, "r1")
	flush(t, o, "r2")
	takes, _ := l.log()
	cs := p.log()
	if got := ops(cs); got != "post new | update edited" {
		t.Fatalf("calls: %s", got)
	}
	var kinds []string
	for _, tk := range takes {
		kinds = append(kinds, fmt.Sprintf("%s:%s", tk.kind, tk.wait))
		if tk.key != "slack|T1" || tk.burst != 5 || tk.perMinute <= 0 || tk.perMinute > 60 {
			t.Errorf("take %+v", tk)
		}
	}
	if len(takes) != 3 || takes[0].kind != outbox.KindUpdate || takes[0].wait != wait ||
		takes[1].kind != outbox.KindPost || takes[2].kind != outbox.KindUpdate || takes[2].wait != 0 {
		t.Fatalf("takes %v, want update told to wait, post, update again", kinds)
	}
	if gap := cs[1].at.Sub(takes[0].at); gap < wait {
		t.Errorf("update sent %s after the limiter said wait %s", gap, wait)
	}
	if s := o.Stats(); s.SharedWaits != 1 || s.Calls != 2 {
		t.Errorf("stats %+v", s)
	}
}

// TestSharedLimiterPause: a 429 pauses the shared budget for Retry-After,
// so that the other replicas hold off too.
func TestSharedLimiterPause(t *testing.T) {
	const retry = 200 * time.Millisecond
	p := &platform{fail: func(c call, n int) error {
		if n == 1 {
			return &outbox.RateLimitError{RetryAfter: retry, Method: "chat.postMessage"}
		}
		return nil
	}}
	l := &limiter{}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil, outbox.WithLimiter(l, "slack|T1"))
	o.Put("c1", "r1", place, 1, 1, answer(0, "hello", true))
	start(t, o)
	flush(t, o, "r1")
	_, pauses := l.log()
	if len(pauses) != 1 || pauses[0] <= retry/2 || pauses[0] > retry {
		t.Fatalf("pauses %v after a 429 asking for %s", pauses, retry)
	}
	if got := ops(p.log()); got != "post hello | post hello" {
		t.Fatalf("calls: %s", got)
	}
}

// TestSharedLimiterDown: a shared limiter that fails (its database is
// down) does not stop the outbox: it goes on within its own buckets.
func TestSharedLimiterDown(t *testing.T) {
	p := &platform{}
	l := &limiter{err: errors.New("connection refused")}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil, outbox.WithLimiter(l, "slack|T1"))
	o.Put("c1", "r1", place, 1, 1, answer(0, "hello", true))
	start(t, o)
	flush(t, o, "r1")
	if takes, _ := l.log(); len(takes) != 1 {
		t.Fatalf("%d takes", len(takes))
	}
	if got := ops(p.log()); got != "post hello" {
		t.Fatalf("calls: %s", got)
	}
}
