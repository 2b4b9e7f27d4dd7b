package chatops_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// scripted is a Provider whose turns are functions of the request.
type scripted struct {
	mu    sync.Mutex
	turns []func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error
	reqs  []agent.RunRequest
}

func (p *scripted) ID() agent.ProviderID { return "fake" }

func (p *scripted) Capabilities(context.Context, agent.CapabilityRequest) (agent.Capabilities, error) {
	return agent.Capabilities{Resume: true, Interactions: true}, nil
}

func (p *scripted) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
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

func (p *scripted) add(f ...func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = append(p.turns, f...)
}

func (p *scripted) requests() []agent.RunRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]agent.RunRequest(nil), p.reqs...)
}

// answer streams text and completes.
func answer(text ...string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
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

// gated streams text, then waits for release (or cancellation).
func gated(release <-chan struct{}, text string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
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

// chats adapts store.Store to chatops.ChatStore and prompt.Chats.
type chats struct{ st *store.Store }

func (c chats) CreateChat(ctx context.Context, ch chatops.Chat) (chatops.Chat, error) {
	sc := store.Chat{ID: ch.ID, Agent: ch.Agent, Model: ch.Model, Effort: ch.Effort, Mode: ch.Mode, Project: ch.Project, Cwd: ch.Cwd}
	return ch, c.st.CreateChat(ctx, &sc)
}

func (c chats) GetChat(ctx context.Context, id string) (chatops.Chat, error) {
	sc, err := c.st.GetChat(ctx, id)
	if err != nil {
		return chatops.Chat{}, err
	}
	return chatops.Chat{ID: sc.ID, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: sc.Mode, Project: sc.Project, Cwd: sc.Cwd}, nil
}

func (c chats) UpdateChat(ctx context.Context, ch chatops.Chat) error {
	sc, err := c.st.GetChat(ctx, ch.ID)
	if err != nil {
		return err
	}
	sc.Agent, sc.Model, sc.Effort, sc.Mode, sc.Project, sc.Cwd = ch.Agent, ch.Model, ch.Effort, ch.Mode, ch.Project, ch.Cwd
	return c.st.UpdateChat(ctx, sc)
}

func (c chats) Chat(ctx context.Context, id string) (prompt.Chat, error) {
	sc, err := c.st.GetChat(ctx, id)
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{ID: sc.ID, Agent: sc.Agent, Model: sc.Model, Mode: agent.Mode(sc.Mode), Project: sc.Project,
		Cwd: sc.Cwd, Sessions: sc.Sessions, ForkPending: sc.ForkPending}, nil
}

func (c chats) SetSession(ctx context.Context, chatID, provider, sessionID string) error {
	return c.st.SetSession(ctx, chatID, provider, sessionID)
}

type feed struct {
	hub *runhub.Hub
	st  *store.Store
}

func (f feed) Subscribe(ctx context.Context, chatID string, afterSeq int64) <-chan chatops.Event {
	return f.hub.Subscribe(ctx, chatID, afterSeq)
}

func (f feed) LastSeq(ctx context.Context, chatID string) (int64, error) {
	return f.st.LastSeq(ctx, chatID)
}

// message is one message the fake surface holds.
type message struct {
	id      string
	place   chatops.Place
	view    chatops.View
	edits   int
	upload  string
	history []chatops.View
}

// surface is an in-memory chatops.Surface recording every call.
type surface struct {
	mu         sync.Mutex
	seq        int
	msgs       map[string]*message
	order      []string
	reactions  []string
	ephemerals []string
	calls      []string
	// limitNext makes the next n updates fail with a rate limit.
	limitNext  int
	retryAfter time.Duration
	changed    chan struct{}
}

func newSurface() *surface {
	return &surface{msgs: map[string]*message{}, changed: make(chan struct{}, 1)}
}

func (s *surface) note(call string) {
	s.calls = append(s.calls, call)
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *surface) Post(_ context.Context, p chatops.Place, v chatops.View) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("1700000000.%06d", s.seq)
	s.msgs[id] = &message{id: id, place: p, view: v, history: []chatops.View{v}}
	s.order = append(s.order, id)
	s.note("post " + id)
	return id, nil
}

func (s *surface) Update(_ context.Context, _ chatops.Place, id string, v chatops.View) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limitNext > 0 {
		s.limitNext--
		s.note("update-429 " + id)
		return &chatops.RateLimitError{RetryAfter: s.retryAfter, Method: "chat.update"}
	}
	m, ok := s.msgs[id]
	if !ok {
		return fmt.Errorf("message_not_found %s", id)
	}
	m.view = v
	m.edits++
	m.history = append(m.history, v)
	s.note("update " + id)
	return nil
}

func (s *surface) Upload(_ context.Context, p chatops.Place, name, content string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("F%06d", s.seq)
	s.msgs[id] = &message{id: id, place: p, upload: content, view: chatops.View{Body: name}}
	s.order = append(s.order, id)
	s.note("upload " + id)
	return id, nil
}

func (s *surface) React(_ context.Context, _ chatops.Place, id, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reactions = append(s.reactions, id+":"+name)
	s.note("react")
	return nil
}

func (s *surface) Ephemeral(_ context.Context, _ chatops.Place, u chatops.User, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ephemerals = append(s.ephemerals, u.ID+": "+text)
	s.note("ephemeral")
	return nil
}

func (s *surface) Mention(q string) string { return "<@" + chatops.ParseUser(q).ID + ">" }

// inThread returns the thread's messages in posting order.
func (s *surface) inThread(p chatops.Place) []*message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*message
	for _, id := range s.order {
		if m := s.msgs[id]; m.place == p {
			cp := *m
			out = append(out, &cp)
		}
	}
	return out
}

func (s *surface) callCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			if os.Getenv("CHATOPS_TEST_LOG") != "" {
				_ = pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type fixture struct {
	st      *store.Store
	hub     *runhub.Hub
	svc     *prompt.Service
	prov    *scripted
	bot     *chatops.Bot
	threads *chatops.Threads
	surf    *surface
	policy  *chatops.Policy
	work    string
}

var testBudget = chatops.Budget{MinInterval: 20 * time.Millisecond,
	Post: chatops.Rate{PerMinute: 6000, Burst: 50}, Update: chatops.Rate{PerMinute: 6000, Burst: 50}}

func setup(t *testing.T, st *store.Store, opts chatops.ThreadsOptions) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("CHATOPS_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	prov := &scripted{}
	svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test"})
	bot := chatops.New(chats{st}, svc, feed{hub, st}, nil, log)
	policy := &chatops.Policy{Admins: []string{"slack:UADMIN"}}
	policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{
		Defaults: chatops.Defaults{Agent: "fake", Model: "m1", Project: "proj"},
		Allow:    []string{"UALLOWED", "UAPPROVER"}, Approvers: []string{"UAPPROVER"},
	})
	if opts.Budget == (chatops.Budget{}) {
		opts.Budget = testBudget
	}
	work := t.TempDir()
	if opts.Workdir == "" {
		opts.Workdir = work
	}
	if opts.IdleFollow == 0 {
		opts.IdleFollow = 200 * time.Millisecond
	}
	// Subtests share a store: every fixture talks in a thread of its own.
	thread.Thread = fmt.Sprintf("1690000000.%06d", time.Now().UnixNano()%1e6)
	threads := chatops.NewThreads(bot, st, policy, opts, log)
	surf := newSurface()
	threads.Attach("slack", surf)
	t.Cleanup(func() {
		threads.Close()
		hub.Close()
	})
	return &fixture{st: st, hub: hub, svc: svc, prov: prov, bot: bot, threads: threads, surf: surf, policy: policy, work: work}
}

var thread = chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1690000000.000100"}

func user(id string) chatops.User { return chatops.User{Platform: "slack", ID: id} }

func (f *fixture) mention(t *testing.T, who, text string) error {
	t.Helper()
	return f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, ID: fmt.Sprintf("1690000001.%06d", time.Now().UnixNano()%1e6),
		User: user(who), Text: text, Mentioned: true})
}

func (f *fixture) chatOf(t *testing.T, p chatops.Place) string {
	t.Helper()
	b, ok, err := f.st.Binding(t.Context(), p)
	if err != nil || !ok {
		t.Fatalf("thread %s not bound (%v)", p, err)
	}
	return b.ChatID
}

// answerMessage returns the first message of the thread whose view has a
// status line (the run's answer).
func (f *fixture) answerMessages(p chatops.Place) []*message {
	var out []*message
	for _, m := range f.surf.inThread(p) {
		if m.view.Status != "" || len(out) > 0 && !strings.HasPrefix(m.view.Body, "*") && m.upload == "" && m.view.Footer != "" {
			out = append(out, m)
		}
	}
	return out
}

func (f *fixture) find(p chatops.Place, pred func(*message) bool) *message {
	for _, m := range f.surf.inThread(p) {
		if pred(m) {
			return m
		}
	}
	return nil
}
