package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// workTurn says something, runs a tool, shows a plan, then says more.
func workTurn(release <-chan struct{}) chatopstest.Turn {
	return func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1", Model: "fake-model-7"})
		if release != nil {
			select {
			case <-release:
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventRunInterrupted})
				return nil
			}
		}
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "I'll create the file now."})
		emit(agent.Event{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Items: []agent.PlanItem{
			{Text: "Create the file", Status: agent.PlanInProgress}, {Text: "Check it", Status: agent.PlanPending}, {Text: "Report", Status: agent.PlanPending}}}})
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "toolu_1", Name: "Bash", Summary: "Bash: touch a.txt"}})
		time.Sleep(50 * time.Millisecond)
		emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "toolu_1", Name: "Bash", Output: "created a.txt"}})
		emit(agent.Event{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Items: []agent.PlanItem{
			{Text: "Create the file", Status: agent.PlanCompleted}, {Text: "Check it", Status: agent.PlanCompleted}, {Text: "Report", Status: agent.PlanCompleted}}}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Tool finished."})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// deleted counts the messages the fake deleted (a harness resuming the
// store's open renders may also try to delete a companion the fake never
// had: message_not_found).
func deleted(fake *slacktest.Server) int {
	n := 0
	for _, c := range fake.Calls("chat.delete") {
		if c.Status == 200 && c.Error == "" {
			n++
		}
	}
	return n
}

// TestAgentUI: with native streaming, the thread shows the work from the
// first moment (an assistant status, then what the agent does, cleared at
// the end), the tool call as a task card between the paragraphs that ends
// complete and stays, the plan with its items, the Stop button in a
// companion message that goes when the stream ends, the reported model and
// the duration once; with streaming off, the same steps as compact lines in
// the final message and "Working…" first.
func TestAgentUI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("native streaming", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			h.stack.Prov.Add(workTurn(nil))
			root := h.fake.PostUserMessage("C1", "", "make a file")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "make a file")), 0); err != nil {
				t.Fatal(err)
			}
			var m slacktest.Message
			chatopstest.WaitFor(t, "the final answer and the cleared status", func() bool {
				var ok bool
				m, _, ok = finalAnswer(t, h.fake, "C1", root)
				return ok && h.fake.Status("C1", root) == "" && len(h.fake.StatusHistory("C1", root)) > 0 && deleted(h.fake) > 0
			})
			if m.Markdown != "I'll create the file now.\n\nTool finished." {
				t.Errorf("streamed %q", m.Markdown)
			}
			var card *slacktest.Task
			var plan []slacktest.Task
			for i, tk := range m.Tasks {
				if tk.ID == "toolu_1" {
					card = &m.Tasks[i]
				}
				if strings.HasPrefix(tk.ID, "plan-") {
					plan = append(plan, tk)
				}
			}
			if card == nil || card.Status != "complete" || card.Title != "Bash: touch a.txt" || card.Output != "created a.txt" || card.After != len("I'll create the file now.") {
				t.Fatalf("task card %+v in %+v", card, m.Tasks)
			}
			if m.PlanTitle != "Plan" || len(plan) != 3 || plan[0].Title != "Create the file" {
				t.Fatalf("plan %q %+v", m.PlanTitle, plan)
			}
			for _, p := range plan {
				if p.Status != "complete" {
					t.Errorf("plan item %+v", p)
				}
			}
			_, ctx := blockText(t, m)
			if len(ctx) != 2 || ctx[0] != "fake · fake-model-7" || !strings.HasPrefix(ctx[1], "Done in ") {
				t.Errorf("context lines %q", ctx)
			}
			// The status: set before the first text, following the tool, cleared at the end.
			var firstStatus, firstText time.Time
			for _, c := range h.fake.Calls("") {
				switch {
				case firstStatus.IsZero() && c.Method == "assistant.threads.setStatus" && c.Form.Get("status") != "":
					firstStatus = c.At
				case firstText.IsZero() && strings.Contains(c.Form.Get("chunks"), "create the file"):
					firstText = c.At
				}
			}
			if firstStatus.IsZero() || firstText.IsZero() || !firstStatus.Before(firstText) {
				t.Errorf("first status at %v, first text at %v", firstStatus, firstText)
			}
			hist := h.fake.StatusHistory("C1", root)
			var shown []string
			for _, s := range hist {
				if !s.ByReply {
					shown = append(shown, s.Status)
				}
			}
			// The first status is what the agent does once the answer's
			// first message is up: thinking, or already the tool.
			if len(shown) < 2 || (shown[0] != "is thinking…" && shown[0] != "is running Bash…") || shown[len(shown)-1] != "" {
				t.Errorf("statuses %q", shown)
			}
			// The companion message held Stop while the answer streamed, and is gone.
			posts := h.fake.Calls("chat.postMessage")
			if len(posts) != 1 || !strings.Contains(posts[0].Form.Get("blocks"), `"action_id":"tl_stop"`) || !strings.Contains(posts[0].Form.Get("text"), outbox.ControlsText) {
				t.Fatalf("companion posts %+v", posts)
			}
			if n := deleted(h.fake); n != 1 {
				t.Fatalf("%d messages deleted: %+v", n, h.fake.Calls("chat.delete"))
			}
			for _, x := range h.fake.Thread("C1", root) {
				if strings.Contains(string(x.Blocks), "tl_stop") {
					t.Errorf("a Stop button is left in the thread: %s", x.Blocks)
				}
			}
		})

		t.Run("the companion's Stop stops a native stream", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			release := make(chan struct{})
			defer close(release)
			h.stack.Prov.Add(workTurn(release))
			root := h.fake.PostUserMessage("C1", "", "wait")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "wait")), 0); err != nil {
				t.Fatal(err)
			}
			var stop chatops.Button
			chatopstest.WaitFor(t, "the companion's Stop button", func() bool {
				for _, x := range h.fake.Thread("C1", root) {
					for _, b := range buttons(t, x) {
						if b.ID == chatops.ButtonStop && !x.Streaming {
							stop = b
							return true
						}
					}
				}
				return false
			})
			if len(h.fake.Calls("chat.startStream")) != 1 {
				t.Fatal("no stream while the companion shows")
			}
			if _, err := h.fake.Envelope("interactive", blockActions(h.fake, "UALLOWED", "C1", root, stop), 0); err != nil {
				t.Fatal(err)
			}
			var m slacktest.Message
			chatopstest.WaitFor(t, "the stopped answer", func() bool {
				var ok bool
				m, _, ok = finalAnswer(t, h.fake, "C1", root)
				return ok && deleted(h.fake) == 1
			})
			if m.Streaming || !strings.Contains(string(m.Blocks), "Stopped") {
				t.Fatalf("stopped answer: streaming %v blocks %s", m.Streaming, m.Blocks)
			}
		})

		t.Run("⏹ on the streamed answer stops it", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			release := make(chan struct{})
			defer close(release)
			h.stack.Prov.Add(chatopstest.Gated(release, "Working on it."))
			root := h.fake.PostUserMessage("C1", "", "wait")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "wait")), 0); err != nil {
				t.Fatal(err)
			}
			var stream slacktest.Message
			chatopstest.WaitFor(t, "the streamed answer", func() bool {
				for _, x := range h.fake.Thread("C1", root) {
					if x.Streaming && x.Markdown == "Working on it." {
						stream = x
						return true
					}
				}
				return false
			})
			react := func(user, name string) {
				t.Helper()
				if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "reaction_added", "user": user, "reaction": name,
					"item_user": slacktest.BotUserID, "item": map[string]any{"type": "message", "channel": "C1", "ts": stream.TS}, "event_ts": h.fake.PostUserMessage("C9", "", "")}), 0); err != nil {
					t.Fatal(err)
				}
			}
			react("UALLOWED", "thumbsup")            // not a command
			react("UOTHER", "black_square_for_stop") // not allowed here
			react("UALLOWED", "black_square_for_stop")
			var m slacktest.Message
			chatopstest.WaitFor(t, "the stopped answer and the companion gone", func() bool {
				var ok bool
				m, _, ok = finalAnswer(t, h.fake, "C1", root)
				return ok && deleted(h.fake) == 1
			})
			if !strings.Contains(string(m.Blocks), "Stopped") {
				t.Fatalf("stopped answer: blocks %s", m.Blocks)
			}
		})

		t.Run("streaming off", func(t *testing.T) {
			h := start(t, st, options{streaming: "off"})
			release := make(chan struct{})
			h.stack.Prov.Add(workTurn(release))
			root := h.fake.PostUserMessage("C1", "", "make a file")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "make a file")), 0); err != nil {
				t.Fatal(err)
			}
			// The agent goes on once the thread shows that it works (a run
			// that ends before its status could go up sends none at all).
			chatopstest.WaitFor(t, "the status", func() bool { return h.fake.Status("C1", root) != "" })
			close(release)
			var m slacktest.Message
			chatopstest.WaitFor(t, "the final answer", func() bool {
				var ok bool
				m, _, ok = finalAnswer(t, h.fake, "C1", root)
				return ok && h.fake.Status("C1", root) == ""
			})
			if posts := h.fake.Calls("chat.postMessage"); len(posts) == 0 || !strings.Contains(posts[0].Form.Get("blocks"), "Working…") {
				t.Errorf("first post %+v", posts)
			}
			if hist := h.fake.StatusHistory("C1", root); len(hist) == 0 || hist[0].Status == "" || hist[len(hist)-1].Status != "" {
				t.Errorf("statuses %+v", hist)
			}
			body, ctx := blockText(t, m)
			lines := strings.Join(ctx, "\n")
			if body != "I'll create the file now.\n\nTool finished." || !strings.Contains(lines, "✓ Bash: touch a.txt") || !strings.Contains(lines, "✓ Create the file") {
				t.Errorf("final body %q, context %q", body, ctx)
			}
			if n := len(h.fake.Calls("chat.startStream")); n != 0 {
				t.Errorf("%d streams with streaming off", n)
			}
			for _, c := range h.fake.Calls("chat.delete") {
				// A harness resuming the store's open renders of the
				// earlier subtests may try their companions (not found).
				if c.Status == 200 && c.Error == "" {
					t.Errorf("deleted with streaming off: %+v", c.Form)
				}
			}
		})
	})
}
