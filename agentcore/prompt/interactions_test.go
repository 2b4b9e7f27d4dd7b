package prompt_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

type ledger struct{ st *store.Store }

func (l ledger) RecordInteraction(ctx context.Context, in prompt.InteractionRecord) error {
	return l.st.CreateInteraction(ctx, store.Interaction{RunID: string(in.RunID), ID: string(in.ID), ChatID: string(in.ChatID), NativeID: in.NativeID, Kind: in.Kind, Payload: in.Payload})
}

func (l ledger) ResolveInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID, status, decision, by string) error {
	return l.st.ResolveInteraction(ctx, runID, id, status, decision, by)
}

// asking is a turn that asks one question or approval and resolves it the way a
// provider does, reporting the answer it received on got.
func asking(kind agent.InteractionKind, got chan<- agent.InteractionResponse, resolve bool) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "q1", NativeID: []byte(`7`), Kind: kind, Title: "Bash: rm -rf build",
			Questions: []agent.Question{{ID: "pw", Text: "Password?", Secret: true}},
		}})
		if !resolve {
			emit(agent.Event{Type: agent.EventRunCompleted})
			return nil
		}
		select {
		case resp := <-req.Responses:
			got <- resp
			status := agent.StatusDeclined
			switch resp.Decision {
			case agent.DecisionApprove:
				status = agent.StatusApproved
			case agent.DecisionAnswer:
				status = agent.StatusAnswered
			}
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: status, Decision: resp.Decision, By: resp.By}})
		case <-ctx.Done():
			return nil
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

func setupLedger(t *testing.T, st *store.Store) *fixture {
	f := setup(t, st)
	f.svc = prompt.New(f.hub, chats{st}, st, []agent.Provider{f.prov}, slog.New(slog.DiscardHandler), prompt.Options{Owner: "test", Ledger: ledger{st}})
	return f
}

// waitPending waits until the run's interaction is in the ledger.
func waitPending(t *testing.T, st *store.Store, runID string) {
	t.Helper()
	for i := 0; i < 500; i++ {
		if in, err := st.GetInteraction(t.Context(), agent.RunID(runID), "q1"); err == nil && in.Status == store.InteractionPending {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("interaction never recorded")
}

func TestInteractionLedger(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("answer is routed once and recorded with who", func(t *testing.T) {
			f := setupLedger(t, st)
			// Unbuffered: the run holds until the test reads the answer, so
			// the second answer below meets a run that is still active.
			got := make(chan agent.InteractionResponse)
			f.prov.turns = append(f.prov.turns, asking(agent.KindCommandApproval, got, true))
			r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Interactive: true})
			if err != nil {
				t.Fatal(err)
			}
			waitPending(t, st, string(r.ID))
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "nope", Decision: agent.DecisionApprove}); !errors.Is(err, prompt.ErrUnknownInteraction) {
				t.Errorf("unknown id: %v", err)
			}
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), "other-run", agent.InteractionResponse{InteractionID: "q1"}); !errors.Is(err, prompt.ErrRunNotActive) {
				t.Errorf("wrong run: %v", err)
			}
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionApprove, By: "alice"}); err != nil {
				t.Fatal(err)
			}
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionDecline, By: "bob"}); !errors.Is(err, prompt.ErrInteractionResolved) {
				t.Errorf("second answer: %v", err)
			}
			if resp := <-got; resp.Decision != agent.DecisionApprove || resp.By != "alice" {
				t.Errorf("provider got %+v", resp)
			}
			<-r.Done()
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "q1"}); !errors.Is(err, prompt.ErrRunNotActive) {
				t.Errorf("after the run: %v", err)
			}
			in, _ := st.GetInteraction(t.Context(), r.ID, "q1")
			if in.Status != store.InteractionApproved || in.ResolvedBy != "alice" || string(in.NativeID) != "7" {
				t.Errorf("ledger %+v", in)
			}
		})

		t.Run("a response must fit the request's kind", func(t *testing.T) {
			for _, c := range []struct {
				kind      agent.InteractionKind
				bad, good []agent.Decision
			}{
				{agent.KindCommandApproval, []agent.Decision{agent.DecisionAnswer, ""}, []agent.Decision{agent.DecisionApprove}},
				{agent.KindToolCall, []agent.Decision{agent.DecisionAnswer, "yes"}, []agent.Decision{agent.DecisionApproveSession}},
				{agent.KindQuestion, []agent.Decision{agent.DecisionApprove, agent.DecisionApproveSession, ""}, []agent.Decision{agent.DecisionAnswer}},
			} {
				f := setupLedger(t, st)
				got := make(chan agent.InteractionResponse, 1)
				f.prov.turns = append(f.prov.turns, asking(c.kind, got, true))
				r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Interactive: true})
				if err != nil {
					t.Fatal(err)
				}
				waitPending(t, st, string(r.ID))
				for _, d := range c.bad {
					err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: d, Answers: map[string]string{"pw": "ok"}, By: "mallory"})
					if !errors.Is(err, prompt.ErrAnswerKind) {
						t.Errorf("%s answered with %q: %v, want ErrAnswerKind", c.kind, d, err)
					}
				}
				if in, _ := st.GetInteraction(t.Context(), r.ID, "q1"); in.Status != store.InteractionPending {
					t.Errorf("%s: a refused response resolved the request: %+v", c.kind, in)
				}
				if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: c.good[0], Answers: map[string]string{"pw": "x"}, By: "alice"}); err != nil {
					t.Fatalf("%s answered with %q: %v", c.kind, c.good[0], err)
				}
				if resp := <-got; resp.Decision != c.good[0] || resp.By != "alice" {
					t.Errorf("%s: provider got %+v", c.kind, resp)
				}
				<-r.Done()
			}
		})

		t.Run("timeout declines as timed_out", func(t *testing.T) {
			f := setupLedger(t, st)
			got := make(chan agent.InteractionResponse, 1)
			f.prov.turns = append(f.prov.turns, asking(agent.KindCommandApproval, got, true))
			r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Interactive: true, InteractionTimeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			<-r.Done()
			if resp := <-got; resp.Decision != agent.DecisionDecline || resp.By != "timeout" {
				t.Errorf("provider got %+v", resp)
			}
			in, _ := st.GetInteraction(t.Context(), r.ID, "q1")
			if in.Status != store.InteractionTimedOut {
				t.Errorf("ledger %+v", in)
			}
			if got := f.types(t, r.ID); !strings.Contains(strings.Join(got, " "), "interaction.requested interaction.resolved") {
				t.Errorf("events %v", got)
			}
		})

		t.Run("pending at turn end becomes turn_ended", func(t *testing.T) {
			f := setupLedger(t, st)
			f.prov.turns = append(f.prov.turns, asking(agent.KindCommandApproval, nil, false))
			r := f.run(t, "x")
			in, _ := st.GetInteraction(t.Context(), r.ID, "q1")
			if in.Status != store.InteractionTurnEnded {
				t.Errorf("ledger %+v", in)
			}
			evs, _ := st.EventsAfter(t.Context(), f.chat, 0, 100)
			last := evs[len(evs)-1]
			if last.Type != "interaction.resolved" || !strings.Contains(string(last.Payload), `"turn_ended"`) {
				t.Errorf("last event %s %s", last.Type, last.Payload)
			}
		})

		t.Run("secret answers reach the agent and nothing else", func(t *testing.T) {
			f := setupLedger(t, st)
			got := make(chan agent.InteractionResponse, 1)
			f.prov.turns = append(f.prov.turns, asking(agent.KindQuestion, got, true))
			r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Interactive: true})
			if err != nil {
				t.Fatal(err)
			}
			waitPending(t, st, string(r.ID))
			const secret = "hunter2-secret-answer"
			if err := f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{
				InteractionID: "q1", Decision: agent.DecisionAnswer, Answers: map[string]string{"pw": secret}, Secret: true, By: "alice",
			}); err != nil {
				t.Fatal(err)
			}
			if resp := <-got; resp.Answers["pw"] != secret {
				t.Errorf("agent did not get the answer: %+v", resp)
			}
			<-r.Done()
			evs, _ := st.EventsAfter(t.Context(), f.chat, 0, 100)
			for _, ev := range evs {
				if strings.Contains(string(ev.Payload), secret) {
					t.Errorf("secret persisted in %s event", ev.Type)
				}
			}
			all, _ := st.ListInteractions(t.Context(), string(f.chat))
			for _, in := range all {
				if strings.Contains(string(in.Payload)+in.Decision+in.ResolvedBy, secret) {
					t.Errorf("secret in the ledger: %+v", in)
				}
			}
		})
	})
}
