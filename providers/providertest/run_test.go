// Tests of Run: its progress-based deadline, its checks of the events
// (one terminal last, nothing after Run returned) and Scale; and the
// recorder the self-tests of the checks fail instead of the real test.

package providertest

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// recorder is a testing.TB that records a Fatalf instead of failing the
// real test (it ends the calling goroutine, as testing does).
type recorder struct {
	testing.TB
	mu    sync.Mutex
	fatal string
	errs  []string
}

func (r *recorder) Helper() {}

func (r *recorder) Logf(string, ...any) {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.mu.Lock()
	r.fatal = fmt.Sprintf(format, args...)
	r.mu.Unlock()
	runtime.Goexit()
}

// runnerFunc is a Runner.
type runnerFunc func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error

func (f runnerFunc) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	return f(ctx, req, emit)
}

// ticker emits a delta every 20 ms for total (forever when 0, until ctx
// ends), then completes; a cancelled turn ends interrupted.
func ticker(total time.Duration) Runner {
	return runnerFunc(func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		start := time.Now()
		for total == 0 || time.Since(start) < total {
			select {
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventRunInterrupted})
				return nil
			case <-tick.C:
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "."})
			}
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
}

// silent writes nothing until cancelled.
var silent = runnerFunc(func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
	<-ctx.Done()
	emit(agent.Event{Type: agent.EventRunInterrupted})
	return nil
})

func runRecorded(t *testing.T, p Runner, idle, limit time.Duration) (*recorder, *Result, time.Duration) {
	rec := &recorder{TB: t}
	var res *Result
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		res = run(rec, p, agent.RunRequest{Prompt: "x"}, nil, idle, limit)
	}()
	<-done
	return rec, res, time.Since(start)
}

func TestRunWaitsOnProgress(t *testing.T) {
	// Events keep coming (every 20 ms) for 2 s, four times the 500 ms idle
	// limit: the run is not cut short. The limit is 25 ticks, so that a
	// loaded machine's scheduling stall does not read as a silent CLI.
	rec, res, took := runRecorded(t, ticker(2*time.Second), 500*time.Millisecond, time.Minute)
	if rec.fatal != "" || len(rec.errs) > 0 {
		t.Fatalf("fatal %q, errors %q", rec.fatal, rec.errs)
	}
	if res.Last().Type != agent.EventRunCompleted || took < 2*time.Second {
		t.Fatalf("last = %s after %v", res.Last().Type, took)
	}
}

func TestRunFailsWithoutProgress(t *testing.T) {
	const idle = 200 * time.Millisecond
	rec, _, took := runRecorded(t, silent, idle, time.Minute)
	if !strings.Contains(rec.fatal, "no event for 200ms") {
		t.Fatalf("fatal = %q", rec.fatal)
	}
	if took < idle || took > 30*time.Second {
		t.Fatalf("stopped after %v", took)
	}
}

func TestRunCap(t *testing.T) {
	const limit = 500 * time.Millisecond
	rec, _, took := runRecorded(t, ticker(0), 10*time.Second, limit)
	if !strings.Contains(rec.fatal, "hit the 500ms cap") {
		t.Fatalf("fatal = %q", rec.fatal)
	}
	if took < limit {
		t.Fatalf("stopped after %v, before the cap", took)
	}
}

func TestScale(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": 10 * time.Second, "2.5": 25 * time.Second, "0.5": 5 * time.Second,
		"0": 10 * time.Second, "-3": 10 * time.Second, "x": 10 * time.Second, "NaN": 10 * time.Second,
	} {
		t.Setenv(ScaleEnv, v)
		if got := Scale(10 * time.Second); got != want {
			t.Errorf("%s=%q: Scale(10s) = %v, want %v", ScaleEnv, v, got, want)
		}
	}
}

type transcribed struct{ text string }

func (r *transcribed) Transcript() string { return "user: " + r.text }

func TestTranscripts(t *testing.T) {
	got := Transcripts([]transcribed{{"a"}, {"b"}})
	if len(got) != 2 || got[0] != "user: a" || got[1] != "user: b" {
		t.Errorf("Transcripts = %q", got)
	}
}

// checked runs f with a recorder in a goroutine of its own (a Fatalf ends
// it) and returns the recorder once f is done.
func checked(t *testing.T, f func(tb testing.TB)) *recorder {
	t.Helper()
	rec := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(rec)
	}()
	<-done
	return rec
}

// failures returns what the recorder was failed with, the Fatalf last.
func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.errs)
	if r.fatal != "" {
		out = append(out, r.fatal)
	}
	return out
}

// checkCases runs each good case, which must not fail, and each bad case,
// which must fail with a message holding its want.
func checkCases(t *testing.T, good map[string]func(tb testing.TB), bad map[string]struct {
	f    func(tb testing.TB)
	want string
}) {
	t.Helper()
	for name, f := range good {
		t.Run("good/"+name, func(t *testing.T) {
			if got := checked(t, f).failures(); len(got) > 0 {
				t.Errorf("failed: %q", got)
			}
		})
	}
	for name, c := range bad {
		t.Run("bad/"+name, func(t *testing.T) {
			got := checked(t, c.f).failures()
			if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, c.want) }) {
				t.Errorf("failures %q; want one with %q", got, c.want)
			}
		})
	}
}

type badCase = struct {
	f    func(tb testing.TB)
	want string
}

// emitting is a Runner that emits evs and returns err.
func emitting(err error, evs ...agent.Event) Runner {
	return runnerFunc(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		for _, ev := range evs {
			emit(ev)
		}
		return err
	})
}

func ev(typ agent.EventType, text string) agent.Event { return agent.Event{Type: typ, Text: text} }

func TestRunChecksTheEvents(t *testing.T) {
	run1 := func(r Runner) func(tb testing.TB) {
		return func(tb testing.TB) { run(tb, r, agent.RunRequest{Prompt: "p"}, nil, RunIdle, RunCap) }
	}
	completed, failed := ev(agent.EventRunCompleted, ""), ev(agent.EventRunFailed, "")
	checkCases(t, map[string]func(testing.TB){
		"one terminal last": run1(emitting(nil, ev(agent.EventAssistantDelta, "a"), completed)),
	}, map[string]badCase{
		"terminal not last": {run1(emitting(nil, completed, ev(agent.EventAssistantDelta, "a"))), "terminal run.completed at 0 of 2"},
		"two terminals":     {run1(emitting(nil, failed, completed)), "2 terminal events"},
	})
}

// TestRunLateEvent: an event emitted after Run returned fails the test,
// whenever it comes: before the test's cleanup through t, after it by a
// panic (t can no longer fail then). The emit is called after run returned,
// so no clock decides whether it is seen.
func TestRunLateEvent(t *testing.T) {
	var late func(agent.Event)
	keep := runnerFunc(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		late = emit
		emit(ev(agent.EventRunCompleted, ""))
		return nil
	})
	var res *Result
	rec := checked(t, func(tb testing.TB) { res = run(tb, keep, agent.RunRequest{Prompt: "p"}, nil, RunIdle, RunCap) })
	if got := rec.failures(); len(got) > 0 {
		t.Fatalf("the run itself failed: %q", got)
	}
	late(ev(agent.EventAssistantDelta, "late"))
	if got := rec.failures(); len(got) != 1 || got[0] != "event assistant.delta emitted after Run returned" {
		t.Errorf("failures %q", got)
	}
	if len(res.Events) != 1 {
		t.Errorf("the late event joined the result: %s", res.TypesText())
	}

	// After the cleanup (poison) the emit panics.
	em := &emitter{t: t, res: &Result{}, progress: make(chan struct{}, 1)}
	em.emit(ev(agent.EventAssistantDelta, "on time"))
	em.poison()
	var msg any
	func() {
		defer func() { msg = recover() }()
		em.emit(ev(agent.EventRunCompleted, "after the test"))
	}()
	if s, _ := msg.(string); !strings.Contains(s, "event run.completed emitted after Run returned and its test") {
		t.Errorf("emit after poison: recovered %v", msg)
	}
	if len(em.res.Events) != 1 {
		t.Errorf("events %s", em.res.TypesText())
	}
}

// TestRunConcurrentEmits: a provider may emit from several goroutines; Run
// keeps every event (go test -race sees an unguarded append).
func TestRunConcurrentEmits(t *testing.T) {
	const n, each = 8, 50
	p := runnerFunc(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				for range each {
					emit(ev(agent.EventAssistantDelta, "."))
				}
			})
		}
		wg.Wait()
		emit(ev(agent.EventRunCompleted, ""))
		return nil
	})
	rec := checked(t, func(tb testing.TB) {
		r := run(tb, p, agent.RunRequest{Prompt: "p"}, nil, RunIdle, RunCap)
		if len(r.Events) != n*each+1 || r.Last().Type != agent.EventRunCompleted {
			tb.Errorf("%d events, last %s", len(r.Events), r.Last().Type)
		}
	})
	if got := rec.failures(); len(got) > 0 {
		t.Errorf("failures %q", got)
	}
}
