package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
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
	err    error              // every take fails so
	paused chan time.Duration // when not nil, told each pause
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
	if l.paused != nil {
		l.paused <- d
	}
	return nil
}

// fail makes every take from now on fail with err (nil: answer again).
func (l *limiter) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.err = err
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
	l := &limiter{paused: make(chan time.Duration, 4)}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil, outbox.WithLimiter(l, "slack|T1"))
	o.Put("c1", "r1", place, 1, 1, answer(0, "hello", true))
	start(t, o)
	flush(t, o, "r1")
	select { // the pause is told in the background
	case <-l.paused:
	case <-time.After(10 * time.Second):
		t.Fatal("no pause told to the shared limiter")
	}
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
	if s := o.Stats(); s.SharedFailures != 1 || s.SharedSkips != 1 || s.Calls != 1 {
		t.Errorf("stats %+v", s)
	}
}

// hung is a shared limiter whose database never answers: its calls block
// until the test ends whatever their context says, as lib/pq's do on a
// stalled connection (its cancel request does not unblock the read).
type hung struct {
	release       chan struct{}
	takes, pauses atomic.Int32
}

func (h *hung) Take(context.Context, string, string, float64, int) (time.Duration, error) {
	h.takes.Add(1)
	<-h.release
	return 0, errors.New("released")
}

func (h *hung) Pause(context.Context, string, time.Duration) error {
	h.pauses.Add(1)
	<-h.release
	return errors.New("released")
}

// TestSharedLimiterHung: a shared limiter that never answers holds up the
// workspace once, for sharedAnswer (500 ms), not per call: it is asked one
// question (at most one in flight), the calls go within the outbox's own
// buckets (the sixth post waits for a refill), and 429s are shared in the
// background (one pause in flight, the next waiting for it). Before, the
// worker waited for each answer (3 posts took 15 s with a limiter honouring
// its 5 s context; with one that never returns, nothing went).
func TestSharedLimiterHung(t *testing.T) {
	h := &hung{release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	p := &platform{fail: func(c call, n int) error {
		if n <= 2 {
			return &outbox.RateLimitError{RetryAfter: 50 * time.Millisecond, Method: "chat.postMessage"}
		}
		return nil
	}}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil, outbox.WithLimiter(h, "slack|T1"))
	const runs = 4
	for i := range runs {
		o.Put("c1", agent.RunID(fmt.Sprint("r", i)), place, 1, 1, answer(0, fmt.Sprint("hello ", i), true))
	}
	t0 := time.Now()
	start(t, o)
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for i := range runs {
		if err := o.Flush(ctx, agent.RunID(fmt.Sprint("r", i))); err != nil {
			t.Fatalf("r%d with a hung shared limiter: %v after %s", i, err, time.Since(t0).Round(time.Millisecond))
		}
	}
	took := time.Since(t0)
	cs := p.log()
	t.Logf("%d calls (2 limited) with a hung shared limiter: %s, %d take asked, %d pause", len(cs), took.Round(time.Millisecond), h.takes.Load(), h.pauses.Load())
	if len(cs) != runs+2 {
		t.Fatalf("calls: %s", ops(cs))
	}
	if n := h.takes.Load(); n != 1 {
		t.Errorf("%d takes asked of a limiter that never answered one", n)
	}
	if n := h.pauses.Load(); n != 1 {
		t.Errorf("%d pauses asked of a limiter that never answered one", n)
	}
	if s := o.Stats(); s.SharedFailures != 1 || s.SharedSkips != len(cs) || s.RateLimited != 2 {
		t.Errorf("stats %+v", s)
	}
	// The own post bucket (burst 5, 57/min) still holds: the sixth call
	// waited for a refill.
	if gap := cs[5].at.Sub(cs[4].at); gap < 700*time.Millisecond {
		t.Errorf("sixth post %s after the fifth: the outbox's own bucket was not kept", gap)
	}
}

// records keeps a logger's records as "LEVEL message".
type records struct {
	mu   sync.Mutex
	msgs []string
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *records) WithGroup(string) slog.Handler            { return r }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.msgs = append(r.msgs, rec.Level.String()+" "+rec.Message)
	return nil
}

func (r *records) about(word string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, m := range r.msgs {
		if strings.Contains(m, word) {
			out = append(out, m)
		}
	}
	return out
}

// TestSharedLimiterBreaker: a failing shared limiter is left alone for the
// breaker's period (1 s here): the posts meanwhile go within the outbox's
// own buckets without asking it; it is asked again after the period, and
// again a period later when that fails too; the outage is logged once, and
// its end once the limiter answers.
func TestSharedLimiterBreaker(t *testing.T) {
	const period = time.Second
	p := &platform{}
	l := &limiter{err: errors.New("connection refused")}
	logs := &records{}
	o := outbox.New(p, nil, outbox.Budget{}, false, slog.New(logs), outbox.WithLimiter(l, "slack|T1"))
	outbox.SetSharedTiming(o, 500*time.Millisecond, period)
	start(t, o)
	// Posts one after another (paced by the own bucket once its burst is
	// spent) until the limiter has been asked three times.
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		run := agent.RunID(fmt.Sprint("r", i))
		o.Put("c1", run, place, 1, 1, answer(0, string(run), true))
		flush(t, o, run)
		takes, _ := l.log()
		if len(takes) == 2 {
			l.fail(nil) // the database is back
		}
		if len(takes) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d takes after %d posts", len(takes), i+1)
		}
	}
	takes, _ := l.log()
	for i := 1; i < len(takes); i++ {
		if gap := takes[i].at.Sub(takes[i-1].at); gap < period {
			t.Errorf("take %d %s after a failed one: the breaker (%s) did not hold", i+1, gap, period)
		}
	}
	s := o.Stats()
	t.Logf("%d posts, %d takes (gaps %s, %s), stats %+v", s.Calls, len(takes), takes[1].at.Sub(takes[0].at).Round(time.Millisecond), takes[2].at.Sub(takes[1].at).Round(time.Millisecond), s)
	if s.SharedFailures != 2 || s.SharedSkips != s.Calls-1 || s.Calls < 6 {
		t.Errorf("stats %+v", s)
	}
	if got := logs.about("shared rate limit"); len(got) != 2 || !strings.HasPrefix(got[0], "WARN") || !strings.HasPrefix(got[1], "INFO") {
		t.Errorf("logs %q, want the outage once and its end", got)
	}
}
