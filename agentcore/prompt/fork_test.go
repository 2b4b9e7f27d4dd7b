// fork_test.go: a fork's runs carry the parent's conversation (natively where
// the agent forks, else the visible transcript up to the fork) and never
// change the parent.

package prompt_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// forkChats is the store as prompt.Chats with the fork fields.
type forkChats struct{ st *store.Store }

func (c forkChats) Chat(ctx context.Context, id agent.ChatID) (prompt.Chat, error) {
	sc, err := c.st.GetChat(ctx, string(id))
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{ID: agent.ChatID(sc.ID), Agent: sc.Agent, Model: sc.Model, Cwd: sc.Cwd, Sessions: sc.Sessions, ForkPending: sc.ForkPending,
		ForkedFrom: agent.ChatID(sc.ForkedFrom), ForkSeq: sc.ForkSeq, ForkSessions: sc.ForkSessions}, nil
}

func (c forkChats) SetSession(ctx context.Context, chatID agent.ChatID, provider, sessionID string) error {
	return c.st.SetSession(ctx, string(chatID), provider, sessionID)
}

// forkService is a service whose agent "fake" forks natively or not.
func forkService(t *testing.T, st *store.Store, native bool) (*prompt.Service, *scripted) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { hub.Close() })
	prov := &scripted{}
	svc := prompt.New(hub, forkChats{st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test",
		Agents: map[string]prompt.AgentConfig{"fake": {Provider: "fake", NativeFork: native}}})
	return svc, prov
}

func runIn(t *testing.T, svc *prompt.Service, chatID agent.ChatID, text string) *prompt.Run {
	t.Helper()
	r, err := svc.Start(t.Context(), prompt.StartRequest{ChatID: chatID, Prompt: text, By: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("run did not end")
	}
	if r.Status() != runhub.StatusCompleted {
		t.Fatalf("run in %s: %s %v", chatID, r.Status(), r.Err())
	}
	return r
}

func fork(t *testing.T, st *store.Store, from string) agent.ChatID {
	t.Helper()
	id := fmt.Sprintf("fork-%d", time.Now().UnixNano())
	if err := st.ForkChat(t.Context(), from, id); err != nil {
		t.Fatal(err)
	}
	return agent.ChatID(id)
}

// history returns the transcript a request carried ("" for none).
func history(req agent.RunRequest) string {
	_, rest, ok := strings.Cut(req.Prompt, "<history>\n")
	if !ok {
		return ""
	}
	h, _, _ := strings.Cut(rest, "\n</history>")
	return h
}

func TestFork(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		parent := store.Chat{ID: fmt.Sprintf("parent-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
		if err := st.CreateChat(ctx, &parent); err != nil {
			t.Fatal(err)
		}
		svc, prov := forkService(t, st, false)
		prov.turns = append(prov.turns, answer("p-1", "Hello Zed."))
		runIn(t, svc, agent.ChatID(parent.ID), "My name is Zed.")
		parentSeq, _ := st.LastSeq(ctx, agent.ChatID(parent.ID))

		t.Run("without native fork the fork gets the parent's transcript and a session of its own", func(t *testing.T) {
			svc, prov := forkService(t, st, false)
			f := fork(t, st, parent.ID)
			prov.turns = append(prov.turns, answer("f-1", "Your name is Zed."), answer("f-1", "Still Zed."))
			runIn(t, svc, f, "What is my name?")
			req := prov.requests()[0]
			if req.ResumeID != "" || req.Fork {
				t.Fatalf("a fork without native fork resumed %q (fork %v): it would change the parent's session", req.ResumeID, req.Fork)
			}
			if h := history(req); !strings.Contains(h, "My name is Zed.") || !strings.Contains(h, "Hello Zed.") {
				t.Fatalf("the fork's first prompt lacks the parent's conversation:\n%s", req.Prompt)
			}
			if !strings.HasSuffix(req.Prompt, "What is my name?") {
				t.Fatalf("prompt %q", req.Prompt)
			}
			// Its next run resumes its own session, with no transcript.
			runIn(t, svc, f, "And now?")
			if req := prov.requests()[1]; req.ResumeID != "f-1" || req.Fork || history(req) != "" {
				t.Fatalf("second run of the fork: resume %q fork %v history %q", req.ResumeID, req.Fork, history(req))
			}
			// The parent is unchanged: its session, its events.
			p, _ := st.GetChat(ctx, parent.ID)
			if p.Sessions["fake"] != "p-1" || p.ForkPending {
				t.Fatalf("the parent changed: %+v", p)
			}
			if seq, _ := st.LastSeq(ctx, agent.ChatID(parent.ID)); seq != parentSeq {
				t.Fatalf("the parent has events up to %d, had %d", seq, parentSeq)
			}
		})

		t.Run("with native fork the first run branches the parent's session", func(t *testing.T) {
			svc, prov := forkService(t, st, true)
			f := fork(t, st, parent.ID)
			prov.turns = append(prov.turns, answer("nf-1", "Zed."), answer("nf-1", "Zed again."))
			runIn(t, svc, f, "What is my name?")
			req := prov.requests()[0]
			if req.ResumeID != "p-1" || !req.Fork || history(req) != "" || req.Prompt != "What is my name?" {
				t.Fatalf("native fork request: resume %q fork %v prompt %q", req.ResumeID, req.Fork, req.Prompt)
			}
			runIn(t, svc, f, "Again?")
			if req := prov.requests()[1]; req.ResumeID != "nf-1" || req.Fork {
				t.Fatalf("after the native fork: resume %q fork %v", req.ResumeID, req.Fork)
			}
			if p, _ := st.GetChat(ctx, parent.ID); p.Sessions["fake"] != "p-1" {
				t.Fatalf("the parent's session changed: %v", p.Sessions)
			}
		})

		t.Run("a stale parent session falls back to the transcript", func(t *testing.T) {
			svc, prov := forkService(t, st, true)
			f := fork(t, st, parent.ID)
			prov.turns = append(prov.turns,
				func(_ context.Context, req agent.RunRequest, _ func(agent.Event)) error {
					return fmt.Errorf("fork %s: %w", req.ResumeID, agent.ErrSessionNotFound)
				},
				answer("r-1", "Zed, from the transcript."))
			runIn(t, svc, f, "Who am I?")
			reqs := prov.requests()
			if len(reqs) != 2 || reqs[1].ResumeID != "" || !strings.Contains(history(reqs[1]), "My name is Zed.") {
				t.Fatalf("recovery requests %+v", reqs)
			}
			if p, _ := st.GetChat(ctx, parent.ID); p.Sessions["fake"] != "p-1" {
				t.Fatalf("the recovery cleared the parent's session: %v", p.Sessions)
			}
		})

		t.Run("the fork sees the parent up to the fork only, and forks of forks see the whole line", func(t *testing.T) {
			svc, prov := forkService(t, st, false)
			f := fork(t, st, parent.ID)
			prov.turns = append(prov.turns, answer("p-1", "Later answer in the parent."))
			runIn(t, svc, agent.ChatID(parent.ID), "A later parent turn.")
			prov.turns = append(prov.turns, answer("f-2", "Fork answer."))
			runIn(t, svc, f, "A fork turn.")
			h := history(prov.requests()[1])
			if strings.Contains(h, "later parent turn") || !strings.Contains(h, "My name is Zed.") {
				t.Fatalf("the fork's history holds what the parent said after the fork:\n%s", h)
			}
			g := fork(t, st, string(f))
			prov.turns = append(prov.turns, answer("g-1", "Grandchild answer."))
			runIn(t, svc, g, "A grandchild turn.")
			h = history(prov.requests()[2])
			first, second := strings.Index(h, "My name is Zed."), strings.Index(h, "A fork turn.")
			if first < 0 || second < first || !strings.Contains(h, "Fork answer.") || strings.Contains(h, "later parent turn") {
				t.Fatalf("a fork of a fork's history:\n%s", h)
			}
		})

		t.Run("the transcript keeps the 24,000-byte bound across the fork", func(t *testing.T) {
			svc, prov := forkService(t, st, false)
			big := store.Chat{ID: fmt.Sprintf("big-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
			if err := st.CreateChat(ctx, &big); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				prov.turns = append(prov.turns, answer("", strings.Repeat(fmt.Sprintf("answer %d ", i), 1000)))
				runIn(t, svc, agent.ChatID(big.ID), fmt.Sprintf("question %d", i))
			}
			f := fork(t, st, big.ID)
			prov.turns = append(prov.turns, answer("", "ok"))
			runIn(t, svc, f, "sum up")
			h := history(prov.requests()[4])
			if len(h) > prompt.TranscriptLimit || len(h) < prompt.TranscriptLimit/2 || !strings.Contains(h, "question 3") || strings.Contains(h, "question 0") {
				t.Fatalf("fork transcript of %d bytes (limit %d); has question 3: %v, question 0: %v",
					len(h), prompt.TranscriptLimit, strings.Contains(h, "question 3"), strings.Contains(h, "question 0"))
			}
		})
	})
}

func (c forkChats) SetAgentModel(ctx context.Context, runID agent.RunID, model string) error {
	return c.st.SetAgentModel(ctx, runID, model)
}

func (c forkChats) NoticeVersion(ctx context.Context, chatID agent.ChatID, what string) (bool, error) {
	return c.st.NoticeVersion(ctx, chatID, what)
}
