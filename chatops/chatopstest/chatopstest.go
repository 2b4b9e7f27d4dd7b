// Package chatopstest wires the real prompt service, run hub and store behind a
// chatops.Chats with a scripted agent provider, for the tests of chatops and of
// the front-ends.
package chatopstest

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
)

// Turn is one scripted agent turn.
type Turn func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error

// Scripted is an agent.Provider ("fake") whose turns are scripted.
type Scripted struct {
	mu    sync.Mutex
	turns []Turn
	reqs  []agent.RunRequest
}

var _ agent.Provider = (*Scripted)(nil)

// ID implements agent.Provider.
func (p *Scripted) ID() agent.ProviderID { return "fake" }

// Run plays the next scripted turn.
func (p *Scripted) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	if len(p.turns) == 0 {
		p.mu.Unlock()
		return errors.New("no scripted turn left")
	}
	f := p.turns[0]
	p.turns = p.turns[1:]
	p.mu.Unlock()
	return f(ctx, req, emit)
}

// Add queues turns.
func (p *Scripted) Add(f ...Turn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = append(p.turns, f...)
}

// Requests returns the requests the provider received.
func (p *Scripted) Requests() []agent.RunRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]agent.RunRequest(nil), p.reqs...)
}

// Answer is a turn that streams text and completes with usage.
func Answer(text ...string) Turn {
	return func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1"})
		for _, t := range text {
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: t})
		}
		emit(agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 1200, OutputTokens: 34, CostUSD: 0.0123}})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// Gated streams text, then waits for release (or cancellation).
func Gated(release <-chan struct{}, text string) Turn {
	return func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: text})
		select {
		case <-release:
			emit(agent.Event{Type: agent.EventRunCompleted})
		case <-ctx.Done():
			emit(agent.Event{Type: agent.EventRunInterrupted})
		}
		return nil
	}
}

// Asking asks for approval of command, reports the answer on got, and then
// answers text.
func Asking(id, command string, got chan<- agent.InteractionResponse, text string) Turn {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: id, NativeID: []byte(`"` + id + `"`), Kind: agent.KindCommandApproval, Title: "Run a command", Command: command}})
		var r agent.InteractionResponse
		select {
		case r = <-req.Responses:
		case <-ctx.Done():
			emit(agent.Event{Type: agent.EventRunInterrupted})
			return nil
		}
		got <- r
		status := map[agent.Decision]string{agent.DecisionApprove: "approved", agent.DecisionApproveSession: "approved_for_session",
			agent.DecisionDecline: "declined", agent.DecisionCancel: "cancelled", agent.DecisionAnswer: "answered"}[r.Decision]
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: id, Status: status, Decision: r.Decision, By: r.By}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: text})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// Stack is the core behind a chatops.Chats.
type Stack struct {
	St   *store.Store
	Hub  *runhub.Hub
	Svc  *prompt.Service
	Prov *Scripted
	Bot  *chatops.Chats
}

// NewStack wires a Bot over st with a scripted provider; the hub is closed in
// t.Cleanup.
func NewStack(t testing.TB, st *store.Store, log *slog.Logger) *Stack {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { hub.Close() })
	prov := &Scripted{}
	svc := prompt.New(hub, chatstore.Store{St: st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test", Ledger: chatstore.Store{St: st}})
	return &Stack{St: st, Hub: hub, Svc: svc, Prov: prov, Bot: chatops.New(chatstore.Store{St: st}, svc, chatstore.Feed{Hub: hub, St: st}, nil, log)}
}

// WaitFor polls cond every 10 ms until it holds or 20 s passed.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Slow streams the chunks with delay between them and completes.
func Slow(chunks []string, delay time.Duration) Turn {
	return func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		for _, c := range chunks {
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventRunInterrupted})
				return nil
			}
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: c})
		}
		emit(agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 10, OutputTokens: 20}})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}
