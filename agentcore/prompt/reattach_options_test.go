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
