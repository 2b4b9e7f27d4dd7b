package prompt_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// optionQuestions is a question interaction with an options-only question,
// an options-only multiple choice, one that allows another answer and an
// optional options-only one.
var optionQuestions = []agent.Question{
	{ID: "pick", Header: "Colour", Text: "Which colour?", Options: []string{"Red", "Green", "Blue"}},
	{ID: "many", Text: "Which letters?", Options: []string{"A", "B", "C"}, MultiSelect: true},
	{ID: "free", Text: "Anything?", Options: []string{"x"}, AllowOther: true},
	{ID: "opt", Text: "Sure?", Options: []string{"Yes", "No"}, Optional: true},
}

// askingOptions asks optionQuestions as q1 and reports the answer it got.
func askingOptions(got chan<- agent.InteractionResponse) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "q1", NativeID: []byte(`8`), Kind: agent.KindQuestion, Questions: optionQuestions,
		}})
		select {
		case resp := <-req.Responses:
			got <- resp
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: agent.StatusAnswered, Decision: resp.Decision, By: resp.By}})
		case <-ctx.Done():
			return nil
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

func TestOptionsOnlyAnswers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setupLedger(t, st)
		got := make(chan agent.InteractionResponse, 1)
		f.prov.turns = append(f.prov.turns, askingOptions(got))
		r, err := f.svc.Start(t.Context(), prompt.StartRequest{ChatID: f.chat, Prompt: "x", Interactive: true})
		if err != nil {
			t.Fatal(err)
		}
		waitPending(t, st, string(r.ID))
		answer := func(answers map[string]string) error {
			return f.svc.RespondInteraction(t.Context(), agent.ChatID(f.chat), r.ID, agent.InteractionResponse{
				InteractionID: "q1", Decision: agent.DecisionAnswer, Answers: answers, By: "alice",
			})
		}
		for _, c := range []struct {
			name    string
			answers map[string]string
			options string
		}{
			{"free text", map[string]string{"pick": "purple-typed", "many": "A"}, "1. Red · 2. Green · 3. Blue"},
			{"number out of range", map[string]string{"pick": "4", "many": "A"}, "1. Red · 2. Green · 3. Blue"},
			{"one line of a multiple choice", map[string]string{"pick": "Red", "many": "A\nzebra-typed"}, "1. A · 2. B · 3. C"},
			{"an optional question answered with free text", map[string]string{"pick": "Red", "many": "A", "opt": "maybe-typed"}, "1. Yes · 2. No"},
		} {
			err := answer(c.answers)
			if !errors.Is(err, prompt.ErrNotAnOption) {
				t.Fatalf("%s: %v, want ErrNotAnOption", c.name, err)
			}
			if !strings.Contains(err.Error(), c.options) || strings.Contains(err.Error(), "-typed") {
				t.Errorf("%s: error %q should name the options %q and not the answer", c.name, err, c.options)
			}
			if d, ok := prompt.NotAnOptionDetail(err); !ok || !strings.HasSuffix(d, c.options) || strings.Contains(d, "request") {
				t.Errorf("%s: detail %q (%v) of %q", c.name, d, ok, err)
			}
			if in, _ := st.GetInteraction(t.Context(), r.ID, "q1"); in.Status != store.InteractionPending {
				t.Fatalf("%s: a refused answer resolved the request: %+v", c.name, in)
			}
		}
		sent := map[string]string{"pick": " green ", "many": "1\nc", "free": "my own words"}
		before := maps.Clone(sent)
		if err := answer(sent); err != nil {
			t.Fatalf("an answer naming the options (the optional one skipped): %v", err)
		}
		resp := <-got
		want := map[string]string{"pick": "Green", "many": "A\nC", "free": "my own words"}
		if !maps.Equal(resp.Answers, want) {
			t.Errorf("agent got %q, want %q (each option as offered)", resp.Answers, want)
		}
		if !maps.Equal(sent, before) {
			t.Errorf("the caller's answers were changed: %q", sent)
		}
		<-r.Done()
		if in, _ := st.GetInteraction(t.Context(), r.ID, "q1"); in.Status != store.InteractionAnswered {
			t.Errorf("ledger %+v", in)
		}
	})
}

// TestOptionsOnlyAnswerRouted: an answer that lands on replica B for A's run
// is judged by A, which has the questions: refused with ErrNotAnOption (the
// options named) and the request still pending, then a fitting one arrives
// spelled as the options are.
func TestOptionsOnlyAnswerRouted(t *testing.T) {
	st := storetest.Open(t, store.DialectPostgres)
	ctx := t.Context()
	a := newReplica(t, st, "replica-a", 5*time.Second)
	b := newReplica(t, st, "replica-b", 5*time.Second)
	chat := store.Chat{ID: "chat-routed-options"}
	got := make(chan agent.InteractionResponse, 1)
	r := a.startAsking(t, st, chat.ID, "x", askingOptions(got))
	answer := func(answers map[string]string) error {
		return b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{
			InteractionID: "q1", Decision: agent.DecisionAnswer, Answers: answers, By: "bob",
		})
	}
	err := answer(map[string]string{"pick": "purple-typed", "many": "B"})
	if !errors.Is(err, prompt.ErrNotAnOption) || !strings.Contains(err.Error(), "1. Red · 2. Green · 3. Blue") || strings.Contains(err.Error(), "-typed") {
		t.Fatalf("free text through B: %v, want ErrNotAnOption naming the options", err)
	}
	if d, _ := prompt.NotAnOptionDetail(err); d != `"Colour" takes one of its options: 1. Red · 2. Green · 3. Blue` {
		t.Errorf("routed detail %q of %q", d, err)
	}
	if in, _ := st.GetInteraction(ctx, r.ID, "q1"); in.Status != store.InteractionPending {
		t.Fatalf("a refused routed answer resolved the request: %+v", in)
	}
	if err := answer(map[string]string{"pick": "BLUE", "many": "b\n3"}); err != nil {
		t.Fatalf("options through B: %v", err)
	}
	select {
	case resp := <-got:
		if want := map[string]string{"pick": "Blue", "many": "B\nC"}; !maps.Equal(resp.Answers, want) {
			t.Errorf("A's run got %q, want %q", resp.Answers, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer never reached A's run")
	}
	<-r.Done()
}
