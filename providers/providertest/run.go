// Running one turn of a provider in an e2e test and reading what it emitted.

package providertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// A Run of a real CLI is bounded by its progress, not by a wall clock: it
// fails when no event arrived for RunIdle (a CLI that hangs), and in any case
// after RunCap. Both are multiplied by Scale.
const (
	// RunIdle is how long a Run may go without an event (the CLI's start
	// included) before it is stopped and the test fails.
	RunIdle = 60 * time.Second
	// RunCap bounds a whole Run however steadily it progresses.
	RunCap = 5 * time.Minute
)

// ScaleEnv names the factor (a positive number, e.g. 2 or 0.5) that
// multiplies the e2e tests' deadlines; unset is 1.
const ScaleEnv = "THREADLINE_TEST_TIMEOUT_SCALE"

// Scale returns d multiplied by $THREADLINE_TEST_TIMEOUT_SCALE; an unset or
// invalid value (not a positive number) leaves d as is.
func Scale(d time.Duration) time.Duration {
	f, err := strconv.ParseFloat(os.Getenv(ScaleEnv), 64)
	if err != nil || !(f > 0) || f > 1000 {
		return d
	}
	return time.Duration(float64(d) * f)
}

// Errors a Run's context is cancelled with when it made no progress or
// hit the cap.
var (
	errNoProgress = errors.New("providertest: no event")
	errRunCap     = errors.New("providertest: run cap")
)

// watch cancels ctx with errNoProgress when progress is silent for idle and
// with errRunCap after limit; it returns when stop is closed.
func watch(cancel context.CancelCauseFunc, progress <-chan struct{}, stop <-chan struct{}, idle, limit time.Duration) {
	quiet := time.NewTimer(idle)
	defer quiet.Stop()
	end := time.NewTimer(limit)
	defer end.Stop()
	for {
		select {
		case <-progress:
			quiet.Reset(idle) // no stale tick after Reset (Go 1.23 timers)
		case <-quiet.C:
			cancel(errNoProgress)
			return
		case <-end.C:
			cancel(errRunCap)
			return
		case <-stop:
			return
		}
	}
}

// Runner is the part of agent.Provider an e2e test drives.
type Runner interface {
	Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error
}

// OnEvent sees each event of a run, with the run's cancel.
type OnEvent func(ev agent.Event, cancel context.CancelFunc)

// Result is what one Run returned and emitted.
type Result struct {
	Events  []agent.Event
	Err     error
	Elapsed time.Duration
}

// Run executes one turn of p (ChatID "chat-e2e" and RunID "run-<test name>"
// unless req sets them), collecting its events; onEvent (optional) sees each
// one. A turn of a sandboxed test (Setup, Sandboxed) starts as production
// starts it, as the agent user in the sandbox (Confine). The turn is cancelled when no event arrived for Scale(RunIdle) or
// after Scale(RunCap), and t then fails at once. Run logs the outcome and
// reports a terminal event that is not the last and more than one terminal
// event. Run's emit closes when p's Run returns: an event emitted after that
// fails t, and one emitted after the test's cleanup (when t can no longer
// fail) panics, so that a late event is never lost however late it comes.
func Run(t testing.TB, p Runner, req agent.RunRequest, onEvent OnEvent) *Result {
	t.Helper()
	return run(t, p, req, onEvent, Scale(RunIdle), Scale(RunCap))
}

// withIDs returns req with ChatID "chat-e2e" and RunID "run-<test name>"
// where it sets none.
func withIDs(t testing.TB, req agent.RunRequest) agent.RunRequest {
	if req.ChatID == "" {
		req.ChatID = "chat-e2e"
	}
	if req.RunID == "" {
		req.RunID = "run-" + t.Name()
	}
	return req
}

func run(t testing.TB, p Runner, req agent.RunRequest, onEvent OnEvent, idle, limit time.Duration) *Result {
	t.Helper()
	req = withIDs(t, req)
	ctx, cancelCause := context.WithCancelCause(context.Background())
	defer cancelCause(nil)
	ctx, req = Confine(t, ctx, req)
	cancel := func() { cancelCause(context.Canceled) } // onEvent's cancel
	progress, stop := make(chan struct{}, 1), make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		watch(cancelCause, progress, stop, idle, limit)
	}()
	res := &Result{}
	em := &emitter{t: t, res: res, progress: progress, cancel: cancel, onEvent: onEvent}
	t.Cleanup(em.poison)
	start := time.Now()
	res.Err = p.Run(ctx, req, em.emit)
	em.close()
	res.Elapsed = time.Since(start)
	close(stop)
	<-watched
	t.Logf("Run(%q) = %v in %s; events: %s", req.Prompt, res.Err, res.Elapsed.Round(time.Millisecond), res.TypesText())
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errNoProgress):
		t.Fatalf("Run made no progress: no event for %s (%s=%s)", idle, ScaleEnv, scaleText())
	case errors.Is(cause, errRunCap):
		t.Fatalf("Run hit the %s cap (%s=%s)", limit, ScaleEnv, scaleText())
	}
	terminals := res.Terminals()
	for i, ev := range res.Events {
		if ev.Type.Terminal() && i != len(res.Events)-1 {
			t.Errorf("terminal %s at %d of %d events", ev.Type, i, len(res.Events))
		}
	}
	if terminals > 1 {
		t.Errorf("%d terminal events", terminals)
	}
	return res
}

// emitter is a Run's emit function. Emit may be called from any goroutine;
// after close an event fails the test, and after poison (the test's
// cleanup) it panics.
type emitter struct {
	t        testing.TB
	progress chan<- struct{}
	cancel   context.CancelFunc
	onEvent  OnEvent

	mu       sync.Mutex
	res      *Result // Events appended under mu until close
	closed   bool
	poisoned bool
}

func (e *emitter) emit(ev agent.Event) {
	e.mu.Lock()
	switch {
	case e.poisoned:
		e.mu.Unlock()
		panic(fmt.Sprintf("providertest: event %s emitted after Run returned and its test (%s) ended", ev.Type, e.t.Name()))
	case e.closed:
		// Under mu, so that poison (the cleanup) cannot pass before this
		// reaches t.
		e.t.Errorf("event %s emitted after Run returned", ev.Type)
		e.mu.Unlock()
		return
	}
	e.res.Events = append(e.res.Events, ev)
	e.mu.Unlock()
	select {
	case e.progress <- struct{}{}:
	default: // a reset is already pending
	}
	if e.onEvent != nil {
		e.onEvent(ev, e.cancel)
	}
}

// close ends the run's events: a later emit fails the test, and res.Events
// may be read without the lock.
func (e *emitter) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
}

// poison makes a later emit panic (t can no longer fail).
func (e *emitter) poison() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed, e.poisoned = true, true
}

// Of returns the events of one type.
func (r *Result) Of(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, ev := range r.Events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// Types returns the type of each event, in order.
func (r *Result) Types() []agent.EventType { return Types(r.Events) }

// TypesText returns the event types joined by spaces, for messages.
func (r *Result) TypesText() string {
	s := make([]string, len(r.Events))
	for i, ev := range r.Events {
		s[i] = string(ev.Type)
	}
	return strings.Join(s, " ")
}

// Last returns the last event (the zero event when there was none).
func (r *Result) Last() agent.Event {
	if len(r.Events) == 0 {
		return agent.Event{}
	}
	return r.Events[len(r.Events)-1]
}

// Text joins the assistant.delta texts.
func (r *Result) Text() string { return strings.Join(r.Texts(agent.EventAssistantDelta), "") }

// Texts returns the text of each event of type typ, in order (the chunks
// of tool.output, say).
func (r *Result) Texts(typ agent.EventType) []string {
	var out []string
	for _, ev := range r.Of(typ) {
		out = append(out, ev.Text)
	}
	return out
}

// SessionID returns the first session id a session.updated reported.
func (r *Result) SessionID() string {
	for _, ev := range r.Of(agent.EventSessionUpdated) {
		if ev.SessionID != "" {
			return ev.SessionID
		}
	}
	return ""
}

// Resolutions lists the status of each interaction.resolved.
func (r *Result) Resolutions() []string {
	var out []string
	for _, ev := range r.Of(agent.EventInteractionResolved) {
		out = append(out, ev.Resolution.Status)
	}
	return out
}

// Terminals counts the terminal events.
func (r *Result) Terminals() int {
	n := 0
	for _, ev := range r.Events {
		if ev.Type.Terminal() {
			n++
		}
	}
	return n
}

// CancelOn returns an OnEvent (see Run) that cancels the run at its first
// event of type typ.
func CancelOn(typ agent.EventType) OnEvent {
	return func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == typ {
			cancel()
		}
	}
}

// Events collects the events of runs; Emit may be called from any goroutine.
type Events struct {
	mu  sync.Mutex
	evs []agent.Event
}

// Emit records ev (the emit function of a Run).
func (e *Events) Emit(ev agent.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, ev)
}

// All returns a copy of the events so far.
func (e *Events) All() []agent.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]agent.Event(nil), e.evs...)
}

// Types returns the types of the events so far.
func (e *Events) Types() []agent.EventType { return Types(e.All()) }

// Last returns the last event so far (the zero event when there is none).
func (e *Events) Last() agent.Event {
	evs := e.All()
	if len(evs) == 0 {
		return agent.Event{}
	}
	return evs[len(evs)-1]
}

// Answer returns an OnEvent that answers every interaction.requested on ch
// with decide(interaction), its InteractionID filled in.
func Answer(ch chan<- agent.InteractionResponse, decide func(in *agent.Interaction) agent.InteractionResponse) OnEvent {
	return func(ev agent.Event, _ context.CancelFunc) {
		if ev.Type == agent.EventInteractionRequested && ev.Interaction != nil {
			resp := decide(ev.Interaction)
			resp.InteractionID = ev.Interaction.ID
			ch <- resp
		}
	}
}

// Always decides every interaction with d (and answers, for questions), by "e2e".
func Always(d agent.Decision, answers map[string]string) func(*agent.Interaction) agent.InteractionResponse {
	return Decide(d, answers, "e2e")
}

// Decide decides every interaction with d (and answers, for questions), by
// the user by.
func Decide(d agent.Decision, answers map[string]string, by string) func(*agent.Interaction) agent.InteractionResponse {
	return func(*agent.Interaction) agent.InteractionResponse {
		return agent.InteractionResponse{Decision: d, Answers: answers, By: by}
	}
}

func scaleText() string {
	if v := os.Getenv(ScaleEnv); v != "" {
		return fmt.Sprintf("%q", v)
	}
	return "unset"
}

// Logger is a debug-level text logger writing to t's output, for the
// provider under test.
func Logger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
