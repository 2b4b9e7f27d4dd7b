package prompt_test

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
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// interruptingReclaimer frees a chat by interrupting its running run in the
// store when free is set, and records which chats it was asked about.
type interruptingReclaimer struct {
	st   *store.Store
	free bool

	mu    sync.Mutex
	asked []string
}

func (r *interruptingReclaimer) Reclaim(ctx context.Context, chatID string) (bool, error) {
	r.mu.Lock()
	r.asked = append(r.asked, chatID)
	r.mu.Unlock()
	if !r.free {
		return false, nil
	}
	runs, err := r.st.ListRuns(ctx, chatID)
	if err != nil {
		return false, err
	}
	for _, run := range runs {
		if run.Status == runhub.StatusRunning {
			return r.st.InterruptRun(ctx, agent.RunID(run.ID), "interrupted: test")
		}
	}
	return false, nil
}

func (r *interruptingReclaimer) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// TestStartReclaimsAChatOfAGoneProcess: a chat whose run lock another process
// holds in the database is busy unless the Reclaimer frees it; then the prompt
// runs at once. A run of this service's own hub never asks the Reclaimer.
func TestStartReclaimsAChatOfAGoneProcess(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		log := slog.New(slog.DiscardHandler)
		hub := runhub.New(st, log, runhub.Options{Owner: "test"})
		t.Cleanup(func() { hub.Close() })
		prov := &scripted{}
		rec := &interruptingReclaimer{st: st}
		svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test", Reclaimer: rec})
		c := store.Chat{ID: "chat-reclaim", Agent: "fake", Mode: "default", Cwd: t.TempDir()}
		if err := st.CreateChat(t.Context(), &c); err != nil {
			t.Fatal(err)
		}
		id := agent.ChatID(c.ID)
		if err := st.StartRun(t.Context(), store.RunRecord{ID: "held", ChatID: id, Owner: "host:1"}); err != nil {
			t.Fatal(err)
		}

		// The Reclaimer finds the holder alive: busy, nothing persisted.
		if _, err := svc.Start(t.Context(), prompt.StartRequest{ChatID: id, Prompt: "x"}); !errors.Is(err, agent.ErrPromptAlreadyRunning) {
			t.Fatalf("Start on a held chat: %v", err)
		}
		if got := rec.calls(); len(got) != 1 || got[0] != string(id) {
			t.Fatalf("Reclaimer asked about %v", got)
		}
		if n, _ := st.LastSeq(t.Context(), id); n != 0 {
			t.Fatalf("a refused prompt persisted %d events", n)
		}

		// The holder is gone: the Reclaimer frees the chat and the prompt runs.
		rec.free = true
		block := make(chan struct{})
		prov.turns = append(prov.turns, func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
			<-block
			return answer("s1", "ok")(ctx, req, emit)
		})
		r, err := svc.Start(t.Context(), prompt.StartRequest{ChatID: id, Prompt: "y"})
		if err != nil {
			t.Fatalf("Start after the reclaim: %v", err)
		}
		if old, _ := st.GetRun(t.Context(), "held"); old.Status != runhub.StatusInterrupted {
			t.Errorf("held run: %s", old.Status)
		}

		// While this service's own run holds the chat, the Reclaimer is not asked.
		if _, err := svc.Start(t.Context(), prompt.StartRequest{ChatID: id, Prompt: "z"}); !errors.Is(err, agent.ErrPromptAlreadyRunning) {
			t.Fatalf("Start during our own run: %v", err)
		}
		if got := rec.calls(); len(got) != 2 {
			t.Errorf("Reclaimer asked during our own run: %v", got)
		}
		close(block)
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("run did not end")
		}
		if r.Status() != runhub.StatusCompleted {
			t.Errorf("run %s: %v", r.Status(), r.Err())
		}
	})
}
