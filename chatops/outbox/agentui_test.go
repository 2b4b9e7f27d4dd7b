// Tests of what the outbox sends besides message content: task cards and
// plans in a native stream, the status indicator, the companion message of a
// stream's Stop button, and the per-run pace of a long answer.

package outbox_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

func live(k int, v render.View) render.SlotView {
	return render.SlotView{Slot: fmt.Sprintf("answer/%d", k), View: v, Priority: render.PriorityProgress}
}

func stopButton() []render.Button {
	return []render.Button{{ID: render.ButtonStop, Label: "Stop", Value: "v"}}
}

func opsOf(cs []call, which ...string) string {
	var out []string
	for _, c := range cs {
		for _, w := range which {
			switch {
			case c.op != w:
			case c.op == "start": // its body is its chunks too
				out = append(out, c.op+":"+c.rest)
			default:
				out = append(out, c.op+":"+c.rest+c.body)
			}
		}
	}
	return strings.Join(out, " ")
}

// Tool cards go into the stream where their calls began, status changes
// update them in place, and a plan replaces the one shown.
func TestStreamChunks(t *testing.T) {
	s := &streaming{}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond}, true, nil)
	start(t, o)
	put := func(seq int64, v render.View, final bool) {
		sv := live(0, v)
		if final {
			sv.Final, sv.Priority = true, render.PriorityFinal
		}
		o.Put("c1", "r1", place, 1, seq, sv)
		flush(t, o, "r1")
	}
	put(1, render.View{Body: "_Working…_", Working: true}, false)
	put(2, render.View{Body: "I'll create it.", Tasks: []render.Step{{ID: "b1", Title: "Bash: touch a", Status: render.StatusRunning, At: 15}}}, false)
	put(3, render.View{Body: "I'll create it.\n\nDone.", Tasks: []render.Step{{ID: "b1", Title: "Bash: touch a", Status: render.StatusDone, At: 15}},
		Plan: &render.Plan{Title: "Plan", Items: []render.PlanItem{{Text: "a", Status: render.StatusDone}}}}, false)
	put(4, render.View{Body: "I'll create it.\n\nDone.", Tasks: []render.Step{{ID: "b1", Title: "Bash: touch a", Status: render.StatusDone, At: 15}},
		Plan: &render.Plan{Title: "Plan", Items: []render.PlanItem{{Text: "a", Status: render.StatusDone}}}, Footer: "Done in 1s"}, true)
	got := opsOf(s.log(), "start", "append", "stop")
	want := "start: append:I'll create it.[b1 in_progress] append:\n\nDone.[b1 complete]{Plan 1} stop:Done in 1s"
	if got != want {
		t.Fatalf("stream calls\n got %q\nwant %q", got, want)
	}
}

// The status indicator goes up once the answer's first message is there,
// follows the activity at most once per MinInterval, and is cleared when the
// answer is final; a platform without one is not asked again.
func TestStatusIndicator(t *testing.T) {
	t.Run("set, follow, clear", func(t *testing.T) {
		s := &streaming{}
		o := outbox.New(s, nil, outbox.Budget{MinInterval: 50 * time.Millisecond}, true, nil)
		start(t, o)
		o.Put("c1", "r1", place, 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking}))
		flush(t, o, "r1")
		o.Put("c1", "r1", place, 1, 2, live(0, render.View{Body: "x", Activity: "is running Bash…"}))
		o.Put("c1", "r1", place, 1, 3, live(0, render.View{Body: "xy", Activity: "is running Read…"}))
		flush(t, o, "r1")
		o.Put("c1", "r1", place, 1, 4, render.SlotView{Slot: "answer/0", View: render.View{Body: "xyz", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
		flush(t, o, "r1")
		cs := s.log()
		if cs[0].op != "start" {
			t.Fatalf("first call %s: the status went up before the answer's message", cs[0].op)
		}
		if got, want := opsOf(cs, "status"), "status:is thinking… status:is running Read… status:"; got != want {
			t.Fatalf("status calls %q, want %q", got, want)
		}
	})
	t.Run("shown again after a post", func(t *testing.T) {
		// Slack clears the status when the app posts in the thread (the
		// companion message, a card, the next part).
		s := &streaming{}
		o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Hour}, true, nil)
		start(t, o)
		o.Put("c1", "r1", place, 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking, Buttons: stopButton()}))
		flush(t, o, "r1")
		// The same activity again (each render repeats it) changes nothing.
		o.Put("c1", "r1", place, 1, 2, live(0, render.View{Body: "_Working…_", Working: true, Activity: render.ActivityThinking, Buttons: stopButton()}))
		flush(t, o, "r1")
		if got, want := opsOf(s.log(), "start", "post", "status"), "start: status:is thinking… post: status:is thinking…"; got != want &&
			got != "start: post: status:is thinking…" {
			t.Fatalf("calls %q, want %q", got, want)
		}
	})
	t.Run("unsupported", func(t *testing.T) {
		s := &streaming{}
		s.fail = func(c call, _ int) error {
			if c.op == "status" {
				return fmt.Errorf("no assistant here: %w", outbox.ErrUnsupported)
			}
			return nil
		}
		o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond}, true, nil)
		start(t, o)
		for i, run := range []agent.RunID{"r1", "r2"} {
			o.Put("c1", run, place, 1, int64(i), live(0, render.View{Body: "a", Activity: render.ActivityThinking}))
			flush(t, o, run)
		}
		if n := strings.Count(opsOf(s.log(), "status"), "status:"); n != 1 {
			t.Fatalf("%d status calls after the platform said it has none", n)
		}
	})
}

// While an answer streams natively, its Stop button lives in a companion
// message posted after the stream started and deleted when it stops; one
// left over by a dead process is deleted when the run's rows are loaded.
func TestStreamControls(t *testing.T) {
	s := &streaming{}
	o := outbox.New(s, nil, outbox.Budget{MinInterval: time.Millisecond}, true, nil)
	start(t, o)
	o.Put("c1", "r1", place, 1, 1, live(0, render.View{Body: "_Working…_", Working: true, Buttons: stopButton()}))
	flush(t, o, "r1")
	o.Put("c1", "r1", place, 1, 2, live(0, render.View{Body: "Hello", Buttons: stopButton()}))
	flush(t, o, "r1")
	o.Put("c1", "r1", place, 1, 3, render.SlotView{Slot: "answer/0", View: render.View{Body: "Hello.", Footer: "Done"}, Final: true, Priority: render.PriorityFinal})
	flush(t, o, "r1")
	cs := s.log()
	got := opsOf(cs, "start", "post", "append", "stop", "delete")
	if want := "start: post: append:Hello stop:.Done delete:"; got != want {
		t.Fatalf("calls %q\nwant  %q", got, want)
	}
	var posted, deleted string
	for _, c := range cs {
		if c.op == "post" {
			posted = "m2"
			if c.key != "r1/controls" {
				t.Errorf("companion key %q", c.key)
			}
		}
		if c.op == "delete" {
			deleted = c.id
		}
	}
	if posted == "" || deleted != posted {
		t.Errorf("deleted %q, posted %q", deleted, posted)
	}

	// A companion of a stream that died with its process.
	s2 := &streaming{}
	o2 := outbox.New(s2, s2, outbox.Budget{}, true, nil)
	o2.Load([]outbox.Message{{RunID: "r9", Slot: "controls", ChatID: "c1", Place: place, MessageID: "m7"}})
	start(t, o2)
	flush(t, o2, "r9")
	if got := opsOf(s2.log(), "delete", "post", "update"); got != "delete:" || s2.log()[0].id != "m7" {
		t.Fatalf("calls after a restart %q", got)
	}
	if sv := s2.saved; len(sv) != 1 || !sv[0].Final {
		t.Errorf("saved %+v", sv)
	}
}

// A run's answer parts share one pace: a long answer split into several
// messages costs no more progress calls than a short one; an earlier part's
// stream ends as soon as the next part begins, and its final content costs
// nothing more.
func TestRunPace(t *testing.T) {
	s := &streaming{}
	const gap = 40 * time.Millisecond
	o := outbox.New(s, nil, outbox.Budget{MinInterval: gap, Stop: outbox.Rate{PerMinute: 6000, Burst: 50}}, true, nil)
	start(t, o)
	o.Put("c1", "r1", place, 1, 1, live(0, render.View{Body: "part one"}))
	flush(t, o, "r1")
	o.Put("c1", "r1", place, 1, 2, live(0, render.View{Body: "part one."}))
	o.Put("c1", "r1", place, 1, 2, live(1, render.View{Body: "part two"}))
	flush(t, o, "r1")
	final := func(k int, body string) render.SlotView {
		return render.SlotView{Slot: fmt.Sprintf("answer/%d", k), View: render.View{Body: body}, Final: true, Priority: render.PriorityFinal}
	}
	o.Put("c1", "r1", place, 1, 3, final(0, "part one."))
	o.Put("c1", "r1", place, 1, 3, final(1, "part two."))
	flush(t, o, "r1")
	cs := s.log()
	if got, want := opsOf(cs, "start", "append", "stop", "update"), "start:part one stop:. start:part two stop:."; got != want {
		t.Fatalf("calls %q, want %q", got, want)
	}
	// The progress calls (all but the final stop) are a gap apart.
	for i := 1; i < len(cs)-1; i++ {
		if d := cs[i].at.Sub(cs[i-1].at); d < gap-5*time.Millisecond {
			t.Errorf("call %d (%s) %s after the previous one, pace %s", i, cs[i].op, d, gap)
		}
	}
	if st := o.Stats(); st.Calls != 4 {
		t.Errorf("stats %+v", st)
	}
}
