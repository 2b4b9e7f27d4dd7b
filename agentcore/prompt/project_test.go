package prompt_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// fakePreparer records its calls and emits one system event per Prepare.
type fakePreparer struct {
	mu        sync.Mutex
	err       error
	prepared  []agent.RunRequest
	completed []*agent.ContainerTarget
}

func (p *fakePreparer) Prepare(ctx context.Context, provider agent.ProviderID, req agent.RunRequest, emit func(agent.Event)) (*agent.ContainerTarget, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.prepared = append(p.prepared, req)
	emit(agent.Event{Type: agent.EventSystem, Subtype: "container_starting", Text: "Starting container " + req.Project + "-c."})
	if p.err != nil {
		return nil, p.err
	}
	return &agent.ContainerTarget{Instance: req.Project + "-c", Secrets: []agent.EnvVar{{Key: "K", Value: "secret-value"}}}, nil
}

func (p *fakePreparer) Completed(ctx context.Context, provider agent.ProviderID, target *agent.ContainerTarget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.completed = append(p.completed, target)
}

func (p *fakePreparer) counts() (int, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.prepared), len(p.completed)
}

// projectChats maps the chat's project too.
type projectChats struct{ chats }

func (c projectChats) Chat(ctx context.Context, id agent.ChatID) (prompt.Chat, error) {
	ch, err := c.chats.Chat(ctx, id)
	if err != nil {
		return ch, err
	}
	sc, err := c.st.GetChat(ctx, string(id))
	ch.Project = sc.Project
	return ch, err
}

func setupProject(t *testing.T, st *store.Store, prep prompt.Preparer, project string) *fixture {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { hub.Close() })
	prov := &scripted{}
	svc := prompt.New(hub, projectChats{chats{st}}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test", Preparer: prep})
	c := store.Chat{ID: fmt.Sprintf("chat-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir(), Project: project}
	if err := st.CreateChat(t.Context(), &c); err != nil {
		t.Fatal(err)
	}
	return &fixture{st: st, hub: hub, svc: svc, prov: prov, chat: agent.ChatID(c.ID)}
}

func TestProjectRuns(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("runs in the prepared container", func(t *testing.T) {
			prep := &fakePreparer{}
			f := setupProject(t, st, prep, "web")
			f.prov.turns = append(f.prov.turns, answer("s1", "hi"))
			r := f.run(t, "hello")
			if r.Status() != runhub.StatusCompleted {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			req := f.prov.requests()[0]
			if req.Container == nil || req.Container.Instance != "web-c" || req.Project != "web" {
				t.Fatalf("provider got container %v", req.Container)
			}
			want := "user.message run.started system/container_starting session.updated assistant.delta usage.updated run.completed"
			if got := strings.Join(f.types(t, r.ID), " "); got != want {
				t.Errorf("events\n got %s\nwant %s", got, want)
			}
			if p, c := prep.counts(); p != 1 || c != 1 {
				t.Errorf("prepared %d, completed %d; want 1, 1", p, c)
			}
			evs, _ := st.EventsAfter(t.Context(), f.chat, 0, 100)
			for _, ev := range evs {
				if strings.Contains(string(ev.Payload), "secret-value") {
					t.Errorf("secret persisted in %s", ev.Type)
				}
			}
		})

		t.Run("a session-recovery retry reuses the container", func(t *testing.T) {
			prep := &fakePreparer{}
			f := setupProject(t, st, prep, "web")
			f.prov.turns = append(f.prov.turns,
				answer("s1", "one"),
				func(context.Context, agent.RunRequest, func(agent.Event)) error {
					return fmt.Errorf("resume: %w", agent.ErrSessionNotFound)
				},
				answer("s2", "two"))
			f.run(t, "first")
			r := f.run(t, "second")
			if r.Status() != runhub.StatusCompleted {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			reqs := f.prov.requests()
			if len(reqs) != 3 || reqs[2].Container == nil || reqs[2].Container != reqs[1].Container {
				t.Fatalf("retry container %v vs %v", reqs[2].Container, reqs[1].Container)
			}
			if p, _ := prep.counts(); p != 2 {
				t.Errorf("prepared %d times for two runs", p)
			}
		})

		t.Run("a failed preparation fails the run without the provider", func(t *testing.T) {
			prep := &fakePreparer{err: errors.New("container web-c does not exist: no image")}
			f := setupProject(t, st, prep, "web")
			r := f.run(t, "hello")
			if r.Status() != runhub.StatusFailed || r.Err() == nil || !strings.Contains(r.Err().Error(), "no image") {
				t.Fatalf("status %s err %v", r.Status(), r.Err())
			}
			if n := len(f.prov.requests()); n != 0 {
				t.Errorf("provider ran %d times", n)
			}
			want := "user.message run.started system/container_starting run.failed"
			if got := strings.Join(f.types(t, r.ID), " "); got != want {
				t.Errorf("events\n got %s\nwant %s", got, want)
			}
			if _, c := prep.counts(); c != 0 {
				t.Error("Completed after a failed preparation")
			}
		})

		t.Run("no credential sync after a failed run", func(t *testing.T) {
			prep := &fakePreparer{}
			f := setupProject(t, st, prep, "web")
			f.prov.turns = append(f.prov.turns, func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventRunFailed, Text: "boom"})
				return agent.ErrRunFailed
			})
			r := f.run(t, "hello")
			if r.Status() != runhub.StatusFailed {
				t.Fatalf("status %s", r.Status())
			}
			if _, c := prep.counts(); c != 0 {
				t.Error("Completed after a failed run")
			}
		})

		t.Run("a chat without a project runs on the host", func(t *testing.T) {
			prep := &fakePreparer{}
			f := setupProject(t, st, prep, "")
			f.prov.turns = append(f.prov.turns, answer("s1", "hi"))
			f.run(t, "hello")
			if p, _ := prep.counts(); p != 0 || f.prov.requests()[0].Container != nil {
				t.Errorf("prepared %d, container %v", p, f.prov.requests()[0].Container)
			}
		})
	})
}
