// Running one turn of a provider in an e2e test and reading what it emitted.

package providertest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// RunTimeout bounds one Run of a real CLI.
const RunTimeout = 30 * time.Second

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

// Run executes one turn of p under RunTimeout (ChatID "chat-e2e" and RunID
// "run-<test name>" unless req sets them), collecting its events; onEvent
// (optional) sees each one. It logs the outcome, fails t at once when the
// timeout hit, and reports an event emitted after Run returned, a terminal
// event that is not the last and more than one terminal event.
func Run(t testing.TB, p Runner, req agent.RunRequest, onEvent OnEvent) *Result {
	t.Helper()
	if req.ChatID == "" {
		req.ChatID = "chat-e2e"
	}
	if req.RunID == "" {
		req.RunID = "run-" + t.Name()
	}
	ctx, cancel := context.WithTimeout(context.Background(), RunTimeout)
	defer cancel()
	res := &Result{}
	var mu sync.Mutex
	done := false
	start := time.Now()
	res.Err = p.Run(ctx, req, func(ev agent.Event) {
		mu.Lock()
		if done {
			t.Errorf("event %s emitted after Run returned", ev.Type)
		}
		mu.Unlock()
		res.Events = append(res.Events, ev)
		if onEvent != nil {
			onEvent(ev, cancel)
		}
	})
	mu.Lock()
	done = true
	mu.Unlock()
	res.Elapsed = time.Since(start)
	var types []string
	for _, ev := range res.Events {
		types = append(types, string(ev.Type))
	}
	t.Logf("Run(%q) = %v in %s; events: %s", req.Prompt, res.Err, res.Elapsed.Round(time.Millisecond), strings.Join(types, " "))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("Run hit the %s timeout", RunTimeout)
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

// Last returns the last event (the zero event when there was none).
func (r *Result) Last() agent.Event {
	if len(r.Events) == 0 {
		return agent.Event{}
	}
	return r.Events[len(r.Events)-1]
}

// Text joins the assistant.delta texts.
func (r *Result) Text() string {
	var sb strings.Builder
	for _, ev := range r.Of(agent.EventAssistantDelta) {
		sb.WriteString(ev.Text)
	}
	return sb.String()
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
	return func(*agent.Interaction) agent.InteractionResponse {
		return agent.InteractionResponse{Decision: d, Answers: answers, By: "e2e"}
	}
}
