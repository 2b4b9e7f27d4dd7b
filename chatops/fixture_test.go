package chatops_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
)

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
	// threadMsgs are the messages people and the bot wrote in each thread
	// (ThreadHistory's answer); historyErr fails ThreadHistory; queries
	// records its calls.
	threadMsgs map[chatops.Place][]chatops.ThreadMessage
	historyErr error
	queries    []chatops.HistoryQuery
}

// ThreadHistory answers as a platform does: the thread's messages oldest
// first, those after q.Since (Slack's oldest), whatever else was asked.
func (s *surface) ThreadHistory(_ context.Context, p chatops.Place, q chatops.HistoryQuery) ([]chatops.ThreadMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queries = append(s.queries, q)
	if s.historyErr != nil {
		return nil, s.historyErr
	}
	var out []chatops.ThreadMessage
	for _, m := range s.threadMsgs[p] {
		if q.Since.IsZero() || m.Time.After(q.Since) {
			out = append(out, m)
		}
	}
	return out, nil
}

// say adds a message to a thread as its platform holds it.
func (s *surface) say(p chatops.Place, m chatops.ThreadMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.threadMsgs[p] = append(s.threadMsgs[p], m)
}

func newSurface() *surface {
	return &surface{msgs: map[string]*message{}, changed: make(chan struct{}, 1), threadMsgs: map[chatops.Place][]chatops.ThreadMessage{}}
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
	prov    *chatopstest.Scripted
	bot     *chatops.Chats
	threads *chatops.Desk
	surf    *surface
	policy  *chatops.Policy
	work    string
}

var testBudget = chatops.Budget{MinInterval: 20 * time.Millisecond,
	Post: chatops.Rate{PerMinute: 6000, Burst: 50}, Update: chatops.Rate{PerMinute: 6000, Burst: 50}}

func setup(t *testing.T, st *store.Store, opts chatops.DeskOptions) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	if os.Getenv("CHATOPS_TEST_LOG") != "" {
		log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	stack := chatopstest.NewStack(t, st, log)
	hub, svc, prov, bot := stack.Hub, stack.Svc, stack.Prov, stack.Bot
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
	threads := chatops.NewDesk(bot, chatstore.Store{St: st}, policy, opts, log)
	surf := newSurface()
	threads.Attach("slack", surf)
	t.Cleanup(func() { threads.Close() })
	return &fixture{st: st, hub: hub, svc: svc, prov: prov, bot: bot, threads: threads, surf: surf, policy: policy, work: work}
}

var thread = chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1690000000.000100"}

func user(id string) chatops.User { return chatops.User{Platform: "slack", ID: id} }

func (f *fixture) mention(t *testing.T, who, text string) error {
	t.Helper()
	return f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, ID: fmt.Sprintf("1690000001.%06d", time.Now().UnixNano()%1e6),
		Sent: time.Now(), User: user(who), Text: text, Mentioned: true})
}

func (f *fixture) chatOf(t *testing.T, p chatops.Place) agent.ChatID {
	t.Helper()
	b, ok, err := chatstore.Store{St: f.st}.Binding(t.Context(), p)
	if err != nil || !ok {
		t.Fatalf("thread %s not bound (%v)", p, err)
	}
	return b.ChatID
}

func (f *fixture) find(p chatops.Place, pred func(*message) bool) *message {
	for _, m := range f.surf.inThread(p) {
		if pred(m) {
			return m
		}
	}
	return nil
}
