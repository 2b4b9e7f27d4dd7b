package prompt

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestReattachedQuestionKeepsItsOptions: a question still open when the bot
// died is open again on the reattached run with its kind and questions: an
// answer naming an option is taken (before, the reopened request had no
// kind, so every answer was ErrAnswerKind) and free text to an options-only
// question is ErrNotAnOption, as on the run that asked.
func TestReattachedQuestionKeepsItsOptions(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			q := &agent.Interaction{ID: "q1", Kind: agent.KindQuestion,
				Questions: []agent.Question{{ID: "c", Text: "Which colour?", Options: []string{"Red", "Blue"}}}}
			_, s, run := reattachedRun(t, dialect, slog.New(slog.DiscardHandler), q, func(led storeLedger) {
				if err := led.RecordInteraction(t.Context(), InteractionRecord{RunID: "r1", ID: "q1", ChatID: "c1", NativeID: []byte(`"q1"`), Kind: string(agent.KindQuestion)}); err != nil {
					t.Fatal(err)
				}
			})
			ctx := t.Context()
			if !s.replayed(ctx, run, agent.Event{Type: agent.EventInteractionRequested, Interaction: q}, &attempt{}) {
				t.Fatal("q1's persisted request not matched")
			}
			if _, err := run.claim(agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionAnswer, Answers: map[string]string{"c": "green"}}); !errors.Is(err, ErrNotAnOption) {
				t.Fatalf("free text to the reopened question: %v, want ErrNotAnOption", err)
			}
			resp, err := run.claim(agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionAnswer, Answers: map[string]string{"c": "blue"}})
			if err != nil || resp.Answers["c"] != "Blue" {
				t.Fatalf("an option to the reopened question: %+v, %v", resp.Answers, err)
			}
		})
	}
}

// TestAnswerRightAfterReattach: an approval clicked right after a restart,
// before the reattached run has re-emitted the request it answers, waits
// for it and is taken (before, it was refused as an unknown interaction and
// the user told the request was no longer waiting). An answer to an id the
// run never persisted is still refused at once.
func TestAnswerRightAfterReattach(t *testing.T) {
	q := &agent.Interaction{ID: "p1", Kind: agent.KindCommandApproval}
	_, s, run := reattachedRun(t, storetest.Dialects[0], slog.New(slog.DiscardHandler), q, func(storeLedger) {})
	ctx := t.Context()
	if _, err := run.claimOrAwait(ctx, agent.InteractionResponse{InteractionID: "nosuch", Decision: agent.DecisionApprove}); !errors.Is(err, ErrUnknownInteraction) {
		t.Fatalf("an unknown id: %v, want ErrUnknownInteraction", err)
	}
	waiting := make(chan struct{})
	awaitHook = func() { close(waiting) }
	t.Cleanup(func() { awaitHook = nil })
	type result struct {
		resp agent.InteractionResponse
		err  error
	}
	got := make(chan result, 1)
	go func() {
		r, err := run.claimOrAwait(ctx, agent.InteractionResponse{InteractionID: "p1", Decision: agent.DecisionApprove, By: "slack:U1"})
		got <- result{r, err}
	}()
	<-waiting
	if !s.replayed(ctx, run, agent.Event{Type: agent.EventInteractionRequested, Interaction: q}, &attempt{}) {
		t.Fatal("p1's persisted request not matched")
	}
	r := <-got
	if r.err != nil || r.resp.Decision != agent.DecisionApprove {
		t.Fatalf("the early answer: %+v, %v", r.resp, r.err)
	}
}
