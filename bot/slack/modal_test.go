package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestAnswerModalChoices: a question's options are radio buttons (checkboxes
// when several may be picked) and, when it allows another answer, a
// free-text field beside them; the answer is the typed text when there is
// one, else the picked options; neither is refused in the modal.
func TestAnswerModalChoices(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{})
	got := make(chan agent.InteractionResponse, 1)
	h.stack.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "ask-1", Kind: agent.KindQuestion,
			Questions: []agent.Question{
				{ID: "branch", Text: "Which branch?", Options: []string{"main", "dev"}, AllowOther: true},
				{ID: "checks", Text: "Which checks?", Options: []string{"lint", "test", "race"}, MultiSelect: true},
			}}})
		r := <-req.Responses
		got <- r
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "ask-1", Status: "answered", By: r.By}})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	root := h.fake.PostUserMessage("C1", "", "release")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UAPPROVER", "C1", root, "", "release")), 0); err != nil {
		t.Fatal(err)
	}
	var answerBtn chatops.Button
	chatopstest.WaitFor(t, "the question card", func() bool {
		for _, m := range h.fake.Thread("C1", root) {
			for _, b := range buttons(t, m) {
				if b.ID == chatops.ButtonAnswer {
					answerBtn = b
					return true
				}
			}
		}
		return false
	})
	if _, err := h.fake.Envelope("interactive", blockActions(h.fake, "UAPPROVER", "C1", root, answerBtn), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "views.open", func() bool { return len(h.fake.Views()) == 1 })
	var view struct {
		CallbackID      string `json:"callback_id"`
		PrivateMetadata string `json:"private_metadata"`
		Blocks          []struct {
			BlockID  string `json:"block_id"`
			Optional bool   `json:"optional"`
			Element  struct {
				Type     string `json:"type"`
				ActionID string `json:"action_id"`
				Options  []struct {
					Value string `json:"value"`
				} `json:"options"`
			} `json:"element"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(h.fake.Views()[0], &view); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, b := range view.Blocks {
		shape = append(shape, b.BlockID+"="+b.Element.Type)
	}
	if want := "q:branch=radio_buttons o:branch=plain_text_input q:checks=checkboxes"; strings.Join(shape, " ") != want {
		t.Fatalf("modal blocks %q, want %q", shape, want)
	}
	if len(view.Blocks[0].Element.Options) != 2 || view.Blocks[0].Element.Options[1].Value != "dev" || !view.Blocks[0].Optional || view.Blocks[2].Optional {
		t.Fatalf("blocks %+v", view.Blocks)
	}
	submit := func(values map[string]any) json.RawMessage {
		p := map[string]any{"type": "view_submission", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UAPPROVER"},
			"view": map[string]any{"id": "V1", "callback_id": view.CallbackID, "private_metadata": view.PrivateMetadata,
				"state": map[string]any{"values": values}}}
		env, err := h.fake.Envelope("interactive", p, 0)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := h.fake.WaitAck(env, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return ack
	}
	checks := map[string]any{"choice": map[string]any{"type": "checkboxes", "selected_options": []map[string]any{{"value": "lint"}, {"value": "race"}}}}
	// Neither a pick nor a typed branch: refused in the modal.
	ack := submit(map[string]any{"q:branch": map[string]any{"choice": map[string]any{"type": "radio_buttons"}},
		"o:branch": map[string]any{"answer": map[string]any{"type": "plain_text_input", "value": " "}}, "q:checks": checks})
	if !strings.Contains(string(ack), `"response_action":"errors"`) || !strings.Contains(string(ack), "q:branch") {
		t.Fatalf("ack %s", ack)
	}
	// A typed branch beats the pick.
	ack = submit(map[string]any{"q:branch": map[string]any{"choice": map[string]any{"type": "radio_buttons", "selected_option": map[string]any{"value": "main"}}},
		"o:branch": map[string]any{"answer": map[string]any{"type": "plain_text_input", "value": "release/2.0"}}, "q:checks": checks})
	if strings.Contains(string(ack), "errors") {
		t.Fatalf("ack %s", ack)
	}
	select {
	case r := <-got:
		if r.Answers["branch"] != "release/2.0" || r.Answers["checks"] != "lint\nrace" {
			t.Fatalf("answers %q", r.Answers)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the answer did not reach the agent")
	}
}
