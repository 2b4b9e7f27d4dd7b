package prompt

import (
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
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
			st := storetest.Open(t, dialect)
			ctx := t.Context()
			if err := st.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "claude"}); err != nil {
				t.Fatal(err)
			}
			if err := st.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1"}); err != nil {
				t.Fatal(err)
			}
			enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
			q := &agent.Interaction{ID: "q1", Kind: agent.KindQuestion,
				Questions: []agent.Question{{ID: "c", Text: "Which colour?", Options: []string{"Red", "Blue"}}}}
			if err := st.AppendEvents(ctx, []runhub.Event{
				{ChatID: "c1", Seq: 1, RunID: "r1", Type: chatlog.TypeUserMessage, Payload: enc(chatlog.UserMessage{Text: "go"})},
				{ChatID: "c1", Seq: 2, RunID: "r1", Type: string(agent.EventInteractionRequested), Payload: enc(agent.Event{Type: agent.EventInteractionRequested, Interaction: q})},
			}); err != nil {
				t.Fatal(err)
			}
			led := storeLedger{st}
			if err := led.RecordInteraction(ctx, InteractionRecord{RunID: "r1", ID: "q1", ChatID: "c1", NativeID: []byte(`"q1"`), Kind: string(agent.KindQuestion)}); err != nil {
				t.Fatal(err)
			}
			s := &Service{history: st, ledger: led, log: slog.New(slog.DiscardHandler), opts: Options{Observer: nopObserver{}}}
			rp, err := s.loadReplay(ctx, "c1", "r1")
			if err != nil {
				t.Fatal(err)
			}
			run := &Run{ID: "r1", ChatID: "c1", responses: make(chan agent.InteractionResponse, 8), ending: make(chan struct{}),
				interactions: map[string]*interactionState{}, resolved: map[string]bool{}, replay: rp}
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
