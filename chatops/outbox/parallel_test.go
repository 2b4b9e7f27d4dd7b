// Tests of many answers at once (issue 31): every thread shows a sign first
// (its status, on its own budget, while the posts wait), the Stop companion
// goes after other threads' first messages, and none is posted where the
// platform has its own Stop.

package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// threads is a streaming platform that records each call's thread in key
// (posts keep their idempotency key), and may show its own Stop.
type threads struct {
	streaming
	own bool
}

func (s *threads) StartStream(_ context.Context, p outbox.Place, cs []outbox.Chunk) (string, error) {
	return s.do(call{op: "start", key: p.Thread, rest: chunkText(cs)})
}

func (s *threads) SetStatus(_ context.Context, p outbox.Place, status string) error {
	_, err := s.do(call{op: "status", id: "-", key: p.Thread, body: status})
	return err
}

func (s *threads) OwnStop(outbox.Place) bool { return s.own }

func inThread(n int) outbox.Place {
	p := place
	p.Thread = fmt.Sprintf("%d.1", n)
	return p
}

// Three answers begin at once with a budget of one stream start at a time:
// each thread's status goes up before any stream starts, the streams start
// in the order of their first tokens, a stream that started is the sign
// from then on (no status call follows, not even the clear), and every
// Stop companion is posted and deleted.
func TestSignFirst(t *testing.T) {
	s := &threads{}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond, Start: outbox.Rate{PerMinute: 1200, Burst: 1}}, true, nil)
	runs := []agent.RunID{"r1", "r2", "r3"}
	for i, run := range runs {
		o.Put("c1", run, inThread(i+1), 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking, Buttons: stopButton()}))
	}
	start(t, o)
	for _, run := range runs {
		flush(t, o, run)
	}
	for i, run := range runs {
		o.Put("c1", run, inThread(i+1), 1, 2, live(0, render.View{Body: "Hello", Activity: "is running Bash…", Buttons: stopButton()}))
		o.Put("c1", run, inThread(i+1), 1, 3, render.SlotView{Slot: "answer/0", View: render.View{Body: "Hello.", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
	}
	for _, run := range runs {
		flush(t, o, run)
	}
	cs := s.log()
	firstStart := -1
	var starts []string
	statuses := map[string][]string{}
	for i, c := range cs {
		switch c.op {
		case "status":
			statuses[c.key] = append(statuses[c.key], c.body)
			if firstStart >= 0 {
				t.Errorf("status %q in %s after a stream started: %s", c.body, c.key, opsOf(cs, "status", "start", "post"))
			}
		case "start":
			if firstStart < 0 {
				firstStart = i
			}
			starts = append(starts, c.key)
		}
	}
	for i := range runs {
		if got := strings.Join(statuses[fmt.Sprintf("%d.1", i+1)], ","); got != render.ActivityThinking {
			t.Errorf("thread %d statuses %q, want the one before its stream", i+1, got)
		}
	}
	if got := strings.Join(starts, ","); got != "1.1,2.1,3.1" {
		t.Errorf("streams started in %s, want the order of their first tokens", got)
	}
	if n := strings.Count(opsOf(cs, "delete"), "delete:"); n != 3 {
		t.Errorf("%d companions deleted, want 3", n)
	}
}

// Where the platform shows its own Stop on a stream, no companion is posted
// (nor deleted).
func TestOwnStopNoCompanion(t *testing.T) {
	s := &threads{own: true}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond}, true, nil)
	start(t, o)
	o.Put("c1", "r1", place, 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Buttons: stopButton()}))
	flush(t, o, "r1")
	o.Put("c1", "r1", place, 1, 2, live(0, render.View{Body: "Hello", Buttons: stopButton()}))
	flush(t, o, "r1")
	o.Put("c1", "r1", place, 1, 3, render.SlotView{Slot: "answer/0", View: render.View{Body: "Hello.", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
	flush(t, o, "r1")
	if got, want := opsOf(s.log(), "start", "post", "append", "stop", "delete"), "start: append:Hello stop:.Done"; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
}

// An answer that ends before its first message could go keeps its status
// as the thread's sign until that message goes (the reply clears it): no
// clear is sent before it, nor after.
func TestSignKeptUntilPosted(t *testing.T) {
	s := &threads{}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond, Start: outbox.Rate{PerMinute: 1, Burst: 1},
		Post: outbox.Rate{PerMinute: 120, Burst: 1}}, true, nil)
	for i, run := range []agent.RunID{"r1", "r2"} {
		o.Put("c1", run, inThread(i+1), 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking}))
	}
	start(t, o)
	waitCalls := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for len(s.log()) < n {
			if time.Now().After(deadline) {
				t.Fatalf("calls %s", opsOf(s.log(), "status", "start", "post"))
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitCalls(3) // two statuses, one start
	// Another thread's post takes the post budget's token: r2's post waits.
	o.Put("c1", "r3", inThread(3), 1, 1, render.SlotView{Slot: "answer/0", View: render.View{Body: "Yo."}, Final: true, Priority: render.PriorityFinal})
	flush(t, o, "r3")
	o.Put("c1", "r2", inThread(2), 1, 2, render.SlotView{Slot: "answer/0", View: render.View{Body: "Hi.", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
	flush(t, o, "r2")
	var r2 []string
	for _, c := range s.log() {
		if c.key == "2.1" || c.key == "r2/answer/0" {
			r2 = append(r2, c.op+":"+c.body)
		}
	}
	if got, want := strings.Join(r2, " "), "status:"+render.ActivityThinking+" post:Hi."; got != want {
		t.Fatalf("thread 2 calls %q, want %q", got, want)
	}
}

// A 429 on a status holds up statuses only: the answer goes on (Slack's
// status methods have limits of their own).
func TestStatusLimitAlone(t *testing.T) {
	s := &threads{}
	s.fail = func(c call, n int) error {
		if c.op == "status" {
			return &outbox.RateLimitError{RetryAfter: time.Hour, Method: "assistant.threads.setStatus"}
		}
		return nil
	}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond, Start: outbox.Rate{PerMinute: 1, Burst: 1}}, true, nil)
	for i, run := range []agent.RunID{"r1", "r2"} {
		o.Put("c1", run, inThread(i+1), 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking}))
	}
	start(t, o)
	o.Put("c1", "r1", inThread(1), 1, 2, render.SlotView{Slot: "answer/0", View: render.View{Body: "Hi.", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
	flush(t, o, "r1")
	if got := opsOf(s.log(), "status", "start", "stop", "post"); !(strings.Contains(got, "stop:") || strings.Contains(got, "post:Hi.")) || strings.Count(got, "status:") != 1 {
		t.Fatalf("calls %q, want one status (limited) and the answer's end", got)
	}
}
