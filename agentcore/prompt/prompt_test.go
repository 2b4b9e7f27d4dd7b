package prompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// scripted is a Provider whose turns are functions of the request.
type scripted struct {
	mu    sync.Mutex
	turns []func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error
	reqs  []agent.RunRequest
}

func (p *scripted) ID() agent.ProviderID { return "fake" }

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

func (p *scripted) requests() []agent.RunRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]agent.RunRequest(nil), p.reqs...)
}

// answer is a turn that streams text and completes in session sid.
func answer(sid string, text ...string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: sid})
		for _, t := range text {
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: t})
		}
		emit(agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 10, OutputTokens: 5}})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

type chats struct{ st *store.Store }

func (c chats) Chat(ctx context.Context, id agent.ChatID) (prompt.Chat, error) {
	sc, err := c.st.GetChat(ctx, string(id))
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{ID: agent.ChatID(sc.ID), Agent: sc.Agent, Model: sc.Model, Cwd: sc.Cwd, Sessions: sc.Sessions}, nil
}

func (c chats) SetSession(ctx context.Context, chatID agent.ChatID, provider, sessionID string) error {
	return c.st.SetSession(ctx, string(chatID), provider, sessionID)
}

type fixture struct {
	st   *store.Store
	hub  *runhub.Hub
	svc  *prompt.Service
	prov *scripted
	chat agent.ChatID
}

func setup(t *testing.T, st *store.Store) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { hub.Close() })
	prov := &scripted{}
	svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test"})
	c := store.Chat{ID: fmt.Sprintf("chat-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
	if err := st.CreateChat(t.Context(), &c); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, hub: hub, svc: svc, prov: prov, chat: agent.ChatID(c.ID)}
}

func (f *fixture) run(t *testing.T, text string) *prompt.Run {
	t.Helper()
	r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: text, By: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end")
	}
	return r
}

func (f *fixture) types(t *testing.T, runID agent.RunID) []string {
	t.Helper()
	evs, err := f.st.EventsAfter(t.Context(), f.chat, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		if ev.RunID != runID {
			continue
		}
		s := ev.Type
		var e agent.Event
		if json.Unmarshal(ev.Payload, &e) == nil && e.Subtype != "" {
			s += "/" + e.Subtype
		}
		out = append(out, s)
	}
	return out
}

func TestService(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("completed run persists in order and saves the session", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, answer("s1", "Hel", "lo"))
			r := f.run(t, "hi")
			if r.Status() != runhub.StatusCompleted || r.Err() != nil {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			want := "user.message run.started session.updated assistant.delta assistant.delta usage.updated run.completed"
			if got := strings.Join(f.types(t, r.ID), " "); got != want {
				t.Errorf("events\n got %s\nwant %s", got, want)
			}
			c, _ := st.GetChat(t.Context(), string(f.chat))
			if c.Sessions["fake"] != "s1" {
				t.Errorf("sessions = %v", c.Sessions)
			}
			run, err := st.GetRun(t.Context(), string(r.ID))
			if err != nil || run.Status != "completed" {
				t.Errorf("run row %+v %v", run, err)
			}
		})

		t.Run("follow-up resumes the native session", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, answer("s1", "one"), answer("s1", "two"))
			f.run(t, "first")
			f.run(t, "second")
			reqs := f.prov.requests()
			if reqs[0].ResumeID != "" || reqs[1].ResumeID != "s1" {
				t.Errorf("resume ids %q %q", reqs[0].ResumeID, reqs[1].ResumeID)
			}
			if reqs[1].Prompt != "second" {
				t.Errorf("a resumed run got history in its prompt: %q", reqs[1].Prompt)
			}
		})

		t.Run("stale session is recovered once with the visible transcript", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns,
				answer("s1", "the answer is 42"),
				func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
					emit(agent.Event{Type: agent.EventRunFailed, Text: "No conversation found with session ID: s1"})
					return fmt.Errorf("resume: %w", agent.ErrSessionNotFound)
				},
				answer("s2", "recovered"),
			)
			f.run(t, "question one")
			r := f.run(t, "question two")
			if r.Status() != runhub.StatusCompleted {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			got := strings.Join(f.types(t, r.ID), " ")
			want := "user.message run.started system/session_recovered session.updated assistant.delta usage.updated run.completed"
			if got != want {
				t.Errorf("events\n got %s\nwant %s", got, want)
			}
			retry := f.prov.requests()[2]
			if retry.ResumeID != "" {
				t.Errorf("retry resumed %q", retry.ResumeID)
			}
			for _, s := range []string{"question one", "the answer is 42", "question two"} {
				if !strings.Contains(retry.Prompt, s) {
					t.Errorf("retry prompt lacks %q:\n%s", s, retry.Prompt)
				}
			}
			if strings.Count(retry.Prompt, "question two") != 1 {
				t.Errorf("the new prompt appears more than once:\n%s", retry.Prompt)
			}
			c, _ := st.GetChat(t.Context(), string(f.chat))
			if c.Sessions["fake"] != "s2" {
				t.Errorf("sessions = %v", c.Sessions)
			}
		})

		t.Run("second prompt while running is refused and persists nothing", func(t *testing.T) {
			f := setup(t, st)
			release := make(chan struct{})
			f.prov.turns = append(f.prov.turns, func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				<-release
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "one"})
			if err != nil {
				t.Fatal(err)
			}
			before, _ := st.LastSeq(t.Context(), f.chat)
			_, err = f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "two"})
			if !errors.Is(err, agent.ErrPromptAlreadyRunning) {
				t.Fatalf("err = %v", err)
			}
			after, _ := st.LastSeq(t.Context(), f.chat)
			if before != after {
				t.Errorf("a refused prompt persisted events: seq %d → %d", before, after)
			}
			close(release)
			<-r.Done()
		})

		t.Run("cancel interrupts without an error", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "working"})
				<-ctx.Done()
				return nil
			})
			r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "long"})
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			if !f.svc.Cancel(f.chat) {
				t.Fatal("Cancel found no run")
			}
			<-r.Done()
			if r.Status() != runhub.StatusInterrupted || r.Err() != nil {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			got := f.types(t, r.ID)
			if got[len(got)-1] != "run.interrupted" {
				t.Errorf("events %v", got)
			}
			for _, typ := range got {
				if typ == "run.failed" {
					t.Errorf("a cancel was persisted as a failure: %v", got)
				}
			}
		})

		t.Run("provider error is persisted as agent exit", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, func(context.Context, agent.RunRequest, func(agent.Event)) error {
				return errors.New("boom")
			})
			r := f.run(t, "x")
			if r.Status() != runhub.StatusFailed {
				t.Fatalf("status %s", r.Status())
			}
			evs, _ := st.EventsAfter(t.Context(), f.chat, 0, 100)
			last := evs[len(evs)-1]
			var e agent.Event
			_ = json.Unmarshal(last.Payload, &e)
			if last.Type != "run.failed" || e.Text != "fake exit: boom" {
				t.Errorf("last event %s %q", last.Type, e.Text)
			}
		})

		t.Run("run failed by the provider is not reported twice", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventRunFailed, Text: "API error 400"})
				return fmt.Errorf("claude: %w", agent.ErrRunFailed)
			})
			r := f.run(t, "x")
			got := strings.Join(f.types(t, r.ID), " ")
			if got != "user.message run.started run.failed" || r.Status() != runhub.StatusFailed {
				t.Errorf("events %s status %s", got, r.Status())
			}
		})

		t.Run("no terminal event is a failure, never a success", func(t *testing.T) {
			f := setup(t, st)
			f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "partial"})
				return nil
			})
			if r := f.run(t, "x"); r.Status() != runhub.StatusFailed {
				t.Errorf("status %s", r.Status())
			}
		})
	})
}

func TestTranscriptIsBounded(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st)
	big := strings.Repeat("é", 20000) // 40,000 bytes
	f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: big + "END"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil // no session: the next run gets the transcript
	}, answer("s", "ok"))
	f.run(t, "first")
	f.run(t, "second")
	p := f.prov.requests()[1].Prompt
	if !strings.Contains(p, "END") || !strings.HasSuffix(p, "second") {
		t.Errorf("prompt lacks the newest history or the new message")
	}
	if len(p) > prompt.TranscriptLimit+200 {
		t.Errorf("prompt is %d bytes, history should be bounded to %d", len(p), prompt.TranscriptLimit)
	}
	if !strings.Contains(p, "é") || strings.ContainsRune(p, '\uFFFD') {
		t.Errorf("history was cut inside a rune")
	}
}

func TestShutdownInterruptsEveryRun(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st)
	started := make(chan struct{}, 2)
	block := func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		started <- struct{}{}
		<-ctx.Done()
		return nil
	}
	f.prov.turns = append(f.prov.turns, block, block)
	c2 := store.Chat{ID: string(f.chat) + "-2", Agent: "fake", Cwd: t.TempDir()}
	if err := st.CreateChat(t.Context(), &c2); err != nil {
		t.Fatal(err)
	}
	var runs []*prompt.Run
	for _, id := range []agent.ChatID{f.chat, agent.ChatID(c2.ID)} {
		r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: id, Prompt: "x"})
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
		<-started
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if r.Status() != runhub.StatusInterrupted {
			t.Errorf("run %s: %s", r.ID, r.Status())
		}
		if row, _ := st.GetRun(t.Context(), string(r.ID)); row.Status != "interrupted" {
			t.Errorf("run row %s: %s", r.ID, row.Status)
		}
	}
}

func TestSkillsFollowTheAgentsStrategy(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st)
	f.svc = prompt.New(f.hub, chats{st}, st, []agent.Provider{f.prov}, slog.New(slog.DiscardHandler), prompt.Options{
		Owner:  "test",
		Agents: map[string]prompt.AgentConfig{"fake": {Provider: "fake", Skills: registry.SkillsSlash}},
		Skills: []registry.Skill{{Name: "review", Path: "/skills/review/SKILL.md"}},
	})
	f.prov.turns = append(f.prov.turns, answer("s", "ok"))
	r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "look at this", Skills: []registry.Skill{{Name: "deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	if got := f.prov.requests()[0].Prompt; got != "/review\n/deploy\n\nlook at this" {
		t.Errorf("prompt = %q", got)
	}
	if _, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Skills: []registry.Skill{{Name: "bad name; rm -rf"}}}); err == nil {
		t.Error("an invalid skill name was accepted")
	}
}

func TestFenceStopsRunsTakenOver(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st)
	started := make(chan struct{})
	f.prov.turns = append(f.prov.turns, func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		close(started)
		<-ctx.Done()
		return nil
	})
	r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if got := f.svc.Fence(t.Context(), func(context.Context, string) (bool, error) { return false, errors.New("db down") }); len(got) != 0 {
		t.Fatalf("a database error stopped runs: %v", got)
	}
	if got := f.svc.Fence(t.Context(), func(context.Context, string) (bool, error) { return true, nil }); len(got) != 0 {
		t.Fatalf("an owned run was stopped: %v", got)
	}
	got := f.svc.Fence(t.Context(), func(_ context.Context, id string) (bool, error) { return id != string(r.ID), nil })
	if len(got) != 1 || got[0] != string(r.ID) {
		t.Fatalf("Fence = %v", got)
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the fenced run did not stop")
	}
}
