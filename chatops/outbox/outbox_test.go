// Tests of the rate-budgeted outbox against a recording platform.

package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

var place = outbox.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.1"}

type call struct {
	op, id, key, body, rest string
	at                      time.Time
}

// platform records every call; fail, when set, decides the outcome of a
// call before it is recorded as sent.
type platform struct {
	mu    sync.Mutex
	calls []call
	saved []outbox.Message
	next  int
	fail  func(c call, n int) error // n counts calls of c.op
	ops   map[string]int
}

func (p *platform) do(c call) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.at = time.Now()
	p.calls = append(p.calls, c)
	if p.ops == nil {
		p.ops = map[string]int{}
	}
	p.ops[c.op]++
	if p.fail != nil {
		if err := p.fail(c, p.ops[c.op]); err != nil {
			return "", err
		}
	}
	if c.id == "" {
		p.next++
		return fmt.Sprintf("m%d", p.next), nil
	}
	return c.id, nil
}

func (p *platform) Post(_ context.Context, _ outbox.Place, v render.View) (string, error) {
	return p.do(call{op: "post", key: v.Key, body: v.Body})
}

func (p *platform) Update(_ context.Context, _ outbox.Place, id string, v render.View) error {
	_, err := p.do(call{op: "update", id: id, body: v.Body})
	return err
}

func (p *platform) Upload(_ context.Context, _ outbox.Place, name, content string) (string, error) {
	return p.do(call{op: "upload", body: name + ":" + content})
}

func (p *platform) SaveRenderedMessage(_ context.Context, m outbox.Message) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.saved = append(p.saved, m)
	return nil
}

func (p *platform) log() []call {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]call(nil), p.calls...)
}

// streaming is a platform with native streaming, a status indicator and
// deletions.
type streaming struct{ platform }

// chunkText renders chunks as "text", "[task id status]" and "{plan title
// n}" in order.
func chunkText(cs []outbox.Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		switch {
		case c.Task != nil:
			fmt.Fprintf(&b, "[%s %s]", c.Task.ID, c.Task.Status)
		case c.Plan != nil:
			fmt.Fprintf(&b, "{%s %d}", c.Plan.Title, len(c.Plan.Items))
		default:
			b.WriteString(c.Markdown)
		}
	}
	return b.String()
}

func (s *streaming) StartStream(_ context.Context, _ outbox.Place, cs []outbox.Chunk) (string, error) {
	return s.do(call{op: "start", rest: chunkText(cs), body: chunkText(cs)})
}

func (s *streaming) AppendStream(_ context.Context, _ outbox.Place, id string, cs []outbox.Chunk) error {
	_, err := s.do(call{op: "append", id: id, rest: chunkText(cs)})
	return err
}

func (s *streaming) StopStream(_ context.Context, _ outbox.Place, id string, cs []outbox.Chunk, v render.View) error {
	_, err := s.do(call{op: "stop", id: id, rest: chunkText(cs), body: v.Footer})
	return err
}

func (s *streaming) SetStatus(_ context.Context, _ outbox.Place, status string) error {
	_, err := s.do(call{op: "status", id: "-", body: status})
	return err
}

func (s *streaming) Delete(_ context.Context, _ outbox.Place, id string) error {
	_, err := s.do(call{op: "delete", id: id})
	return err
}

// start runs o until the test ends.
func start(t *testing.T, o *outbox.Outbox) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { o.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
}

func flush(t *testing.T, o *outbox.Outbox, runID agent.RunID) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := o.Flush(ctx, runID); err != nil {
		t.Fatalf("flush %s: %v", runID, err)
	}
}

func answer(k int, body string, final bool) render.SlotView {
	prio := render.PriorityProgress
	if final {
		prio = render.PriorityFinal
	}
	return render.SlotView{Slot: fmt.Sprintf("answer/%d", k), View: render.View{Body: body}, Priority: prio, Final: final}
}

func ops(cs []call) string {
	var s []string
	for _, c := range cs {
		s = append(s, c.op+" "+c.body)
	}
	return strings.Join(s, " | ")
}

func TestCoalesce(t *testing.T) {
	p := &platform{}
	o := outbox.New(p, p, outbox.Budget{}, false, nil)
	for i := range 100 {
		o.Put("c1", "r1", place, 1, int64(i+1), answer(0, fmt.Sprint("v", i), false))
	}
	o.Put("c1", "r1", place, 1, 101, answer(0, "final", true))
	start(t, o)
	flush(t, o, "r1")
	if got := ops(p.log()); got != "post final" {
		t.Fatalf("calls: %s", got)
	}
	if s := o.Stats(); s.Calls != 1 || s.Failures != 0 || s.RateLimited != 0 {
		t.Errorf("stats %+v", s)
	}
	if len(p.saved) != 1 || p.saved[0].MessageID != "m1" || !p.saved[0].Final || p.saved[0].LastSeq != 101 || p.saved[0].Place != place {
		t.Errorf("saved %+v", p.saved)
	}
	// A message that shows its end never changes again.
	o.Put("c1", "r1", place, 1, 102, answer(0, "late", true))
	flush(t, o, "r1")
	if n := len(p.log()); n != 1 {
		t.Errorf("%d calls after the final content", n)
	}
}

func TestOrder(t *testing.T) {
	p := &platform{}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil)
	o.Put("c1", "r1", place, 1, 3, answer(2, "two", true))
	o.Put("c1", "r1", place, 1, 3, render.SlotView{Slot: render.SlotFile, Upload: "all", Priority: render.PriorityFinal, Final: true})
	o.Put("c1", "r1", place, 1, 3, answer(1, "one", true))
	o.Put("c1", "r1", place, 1, 3, answer(0, "zero", false))
	o.Put("c1", "r1", place, 1, 3, render.SlotView{Slot: "card/q1", View: render.View{Body: "card"}, Priority: render.PriorityCard})
	start(t, o)
	flush(t, o, "r1")
	// The card goes first; answer parts are posted in order, the file after them.
	if got, want := ops(p.log()), "post card | post zero | post one | post two | upload answer.md:all"; got != want {
		t.Fatalf("calls: %s\nwant:  %s", got, want)
	}
	for _, c := range p.log() {
		if c.op == "post" && !strings.HasPrefix(c.key, "r1/") {
			t.Errorf("post without its idempotency key: %+v", c)
		}
	}
}

func TestRateLimitPausesWorkspace(t *testing.T) {
	p := &platform{fail: func(c call, n int) error {
		if c.op == "post" && n == 1 {
			return fmt.Errorf("post: %w", &outbox.RateLimitError{RetryAfter: 300 * time.Millisecond, Method: "chat.postMessage"})
		}
		return nil
	}}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil)
	o.Put("c1", "r1", place, 1, 1, answer(0, "hello", true))
	start(t, o)
	flush(t, o, "r1")
	cs := p.log()
	if len(cs) != 2 || cs[0].key != "r1/answer/0" || cs[1].key != cs[0].key {
		t.Fatalf("calls %+v", cs)
	}
	if gap := cs[1].at.Sub(cs[0].at); gap < 300*time.Millisecond {
		t.Fatalf("retried %s after a 429 asking for 300ms", gap)
	}
	if s := o.Stats(); s.RateLimited != 1 || s.Calls != 2 {
		t.Errorf("stats %+v", s)
	}
}

func TestRetries(t *testing.T) {
	t.Run("network failures are retried with the same key", func(t *testing.T) {
		p := &platform{fail: func(c call, n int) error {
			if n <= 2 {
				return &url.Error{Op: "Post", URL: "https://slack.test/api", Err: errors.New("connection reset")}
			}
			return nil
		}}
		o := outbox.New(p, nil, outbox.Budget{MaxAttempts: 1}, false, nil)
		o.Put("c1", "r1", place, 1, 1, answer(0, "hi", true))
		start(t, o)
		flush(t, o, "r1")
		cs := p.log()
		if len(cs) != 3 || cs[0].key != "r1/answer/0" || cs[2].key != cs[0].key {
			t.Fatalf("calls %+v", cs)
		}
		if s := o.Stats(); s.Failures != 2 {
			t.Errorf("stats %+v", s)
		}
	})
	t.Run("other failures give up after MaxAttempts", func(t *testing.T) {
		p := &platform{fail: func(call, int) error { return errors.New("invalid_blocks") }}
		o := outbox.New(p, nil, outbox.Budget{MaxAttempts: 2}, false, nil)
		o.Put("c1", "r1", place, 1, 1, answer(0, "hi", true))
		start(t, o)
		flush(t, o, "r1")
		if cs := p.log(); len(cs) != 2 {
			t.Fatalf("%d calls, want 2", len(cs))
		}
	})
	t.Run("a deleted message is posted again", func(t *testing.T) {
		p := &platform{fail: func(c call, _ int) error {
			if c.op == "update" {
				return outbox.ErrMessageGone
			}
			return nil
		}}
		o := outbox.New(p, nil, outbox.Budget{MinInterval: time.Millisecond}, false, nil)
		o.Put("c1", "r1", place, 1, 1, answer(0, "first", false))
		start(t, o)
		flush(t, o, "r1")
		o.Put("c1", "r1", place, 1, 2, answer(0, "second", true))
		flush(t, o, "r1")
		if got, want := ops(p.log()), "post first | update second | post second"; got != want {
			t.Fatalf("calls: %s\nwant:  %s", got, want)
		}
	})
}

// Content the store says was sent is not sent again after a restart, and an
// edit reaches the message already posted.
func TestLoad(t *testing.T) {
	p := &platform{}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil)
	sent := answer(0, "done", true)
	o.Load([]outbox.Message{
		{RunID: "r1", Slot: "answer/0", ChatID: "c1", Place: place, MessageID: "m7", Hash: sent.View.Hash(), Final: true},
		{RunID: "r2", Slot: "answer/0", ChatID: "c1", Place: place, MessageID: "m8", Hash: "old"},
	})
	o.Put("c1", "r1", place, 1, 5, sent)
	o.Put("c1", "r2", place, 6, 9, answer(0, "ended", true))
	start(t, o)
	flush(t, o, "r1")
	flush(t, o, "r2")
	cs := p.log()
	if len(cs) != 1 || cs[0].op != "update" || cs[0].id != "m8" || cs[0].body != "ended" {
		t.Fatalf("calls %+v", cs)
	}
	o.Forget("r1")
	o.Forget("r2")
}

func TestBudget(t *testing.T) {
	p := &platform{}
	// One post a second on average, two at once.
	o := outbox.New(p, nil, outbox.Budget{Post: outbox.Rate{PerMinute: 60, Burst: 2}}, false, nil)
	for _, run := range []agent.RunID{"r1", "r2", "r3"} {
		o.Put("c1", run, place, 1, 1, answer(0, string(run), true))
	}
	t0 := time.Now()
	start(t, o)
	for _, run := range []agent.RunID{"r1", "r2", "r3"} {
		flush(t, o, run)
	}
	cs := p.log()
	if len(cs) != 3 {
		t.Fatalf("calls %+v", cs)
	}
	if d := cs[1].at.Sub(t0); d > 500*time.Millisecond {
		t.Errorf("the burst waited %s", d)
	}
	if d := cs[2].at.Sub(cs[0].at); d < 900*time.Millisecond {
		t.Errorf("third post %s after the first, within a budget of one a second", d)
	}
	b := outbox.Budget{}.WithDefaults()
	if b.Post.PerMinute != 60 || b.Update.PerMinute != 50 || b.Append.PerMinute != 100 || b.MinInterval != time.Second || b.MaxAttempts != 3 {
		t.Errorf("defaults %+v", b)
	}
}

func TestStreaming(t *testing.T) {
	t.Run("start, append, stop", func(t *testing.T) {
		s := &streaming{}
		o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond}, true, nil)
		start(t, o)
		o.Put("c1", "r1", place, 1, 1, answer(0, "Hel", false))
		flush(t, o, "r1")
		o.Put("c1", "r1", place, 1, 2, answer(0, "Hello, wo", false))
		flush(t, o, "r1")
		o.Put("c1", "r1", place, 1, 3, answer(0, "Hello, world.", true))
		flush(t, o, "r1")
		var got []string
		for _, c := range s.log() {
			got = append(got, c.op+":"+c.rest)
		}
		if want := "start:Hel append:lo, wo stop:rld."; strings.Join(got, " ") != want {
			t.Fatalf("calls %q, want %q", got, want)
		}
	})
	t.Run("unavailable falls back to posting, then stops trying", func(t *testing.T) {
		s := &streaming{}
		s.fail = func(c call, _ int) error {
			if c.op == "start" {
				return outbox.ErrStreamingUnavailable
			}
			return nil
		}
		o := outbox.New(s, nil, outbox.Budget{}, true, nil)
		start(t, o)
		for i := range 4 {
			run := agent.RunID(fmt.Sprint("r", i))
			o.Put("c1", run, place, 1, 1, answer(0, string(run), false))
			flush(t, o, run)
		}
		if got, want := ops(s.log()), "start r0 | post r0 | start r1 | post r1 | start r2 | post r2 | post r3"; got != want {
			t.Fatalf("calls: %s\nwant:  %s", got, want)
		}
	})
}

func TestFlushEndsWithContext(t *testing.T) {
	p := &platform{}
	o := outbox.New(p, nil, outbox.Budget{}, false, nil) // never run
	o.Put("c1", "r1", place, 1, 1, answer(0, "x", true))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := o.Flush(ctx, "r1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("flush: %v", err)
	}
	if err := o.Flush(t.Context(), "other"); err != nil {
		t.Fatalf("flush of a run with nothing pending: %v", err)
	}
}

func TestRateLimitError(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &outbox.RateLimitError{RetryAfter: time.Second, Method: "chat.update"})
	if !errors.Is(err, outbox.ErrRateLimited) || !strings.Contains(err.Error(), "chat.update rate limited: retry after 1s") {
		t.Fatalf("%v", err)
	}
	if got := place.String(); got != "slack:T1/C1/1.1" {
		t.Errorf("place %q", got)
	}
}
