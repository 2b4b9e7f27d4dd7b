// Tests of Run's progress-based deadline and of Scale.

package providertest

import (
	"context"
	"fmt"
	"runtime"
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
