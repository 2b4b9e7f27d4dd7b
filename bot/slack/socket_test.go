package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestSocketMode(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("mention streams the answer into the thread", func(t *testing.T) {
			h := start(t, st, options{})
			h.stack.Prov.Add(chatopstest.Answer("Hello", " from ", "the agent.\n\n```sh\nls -la\n```"))
			root := h.fake.PostUserMessage("C1", "", "@threadline say hello")
			env, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "say hello")), 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitAck(env, 3*time.Second); err != nil {
				t.Fatal(err)
			}
			var body string
			var msg slacktest.Message
			chatopstest.WaitFor(t, "the final answer", func() bool {
				var ok bool
				msg, body, ok = finalAnswer(t, h.fake, "C1", root)
				return ok
			})
			if want := "Hello from the agent.\n\n```sh\nls -la\n```"; body != want {
				t.Fatalf("answer %q, want %q", body, want)
			}
			if msg.ThreadTS != root {
				t.Fatalf("answer posted in thread %q, want %q", msg.ThreadTS, root)
			}
			if len(buttons(t, msg)) != 0 {
				t.Fatal("the final answer still has buttons")
			}
			_, ctx := blockText(t, msg)
			// The duration is shown once, in the footer.
			if len(ctx) < 2 || ctx[0] != "fake · m1" || !strings.HasPrefix(ctx[len(ctx)-1], "Done in ") || !strings.Contains(ctx[len(ctx)-1], "1,200 in / 34 out tokens") {
				t.Fatalf("context lines %q", ctx)
			}
			// chat.* went form-encoded with the token in the form.
			posts := h.fake.Calls("chat.postMessage")
			if len(posts) == 0 || posts[0].Form.Get("token") != slacktest.BotToken || posts[0].Form.Get("thread_ts") != root {
				t.Fatalf("postMessage calls %+v", posts)
			}
			if req := h.stack.Prov.Requests(); len(req) != 1 || req[0].Prompt != "say hello" {
				t.Fatalf("agent requests %+v", req)
			}
		})

		t.Run("a redelivered event runs once", func(t *testing.T) {
			h := start(t, st, options{})
			h.stack.Prov.Add(chatopstest.Answer("once"), chatopstest.Answer("twice"))
			root := h.fake.PostUserMessage("C1", "", "hi")
			id := eventID()
			payload := callback(id, mention("UALLOWED", "C1", root, "", "hi"))
			for retry := range 3 {
				env, err := h.fake.Envelope("events_api", payload, retry)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := h.fake.WaitAck(env, 3*time.Second); err != nil {
					t.Fatal(err)
				}
			}
			chatopstest.WaitFor(t, "the answer", func() bool { _, _, ok := finalAnswer(t, h.fake, "C1", root); return ok })
			time.Sleep(200 * time.Millisecond)
			if n := len(h.stack.Prov.Requests()); n != 1 {
				t.Fatalf("%d runs for one event delivered three times", n)
			}
		})

		t.Run("a redelivery after a restart is still dropped", func(t *testing.T) {
			h1 := start(t, st, options{})
			h1.stack.Prov.Add(chatopstest.Answer("before the restart"))
			root := h1.fake.PostUserMessage("C1", "", "hi")
			payload := callback(eventID(), mention("UALLOWED", "C1", root, "", "hi"))
			if _, err := h1.fake.Envelope("events_api", payload, 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the answer", func() bool { _, _, ok := finalAnswer(t, h1.fake, "C1", root); return ok })
			h1.stop()
			chatopstest.WaitFor(t, "the first bot's connection to close", func() bool { return h1.fake.Connected() == 0 })
			h2 := start(t, st, options{fake: h1.fake})
			h2.stack.Prov.Add(chatopstest.Answer("after the restart"))
			env, err := h2.fake.Envelope("events_api", payload, 1)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h2.fake.WaitAck(env, 3*time.Second); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond)
			if n := len(h2.stack.Prov.Requests()); n != 0 {
				t.Fatalf("the redelivered event ran again after the restart (%d runs)", n)
			}
		})

		t.Run("direct message and thread replies", func(t *testing.T) {
			h := start(t, st, options{channels: map[string]slackbot.ChannelConfig{
				"C1": {Agent: "fake", Allow: []string{"UALLOWED"}, ReplyWithoutMention: true}}})
			h.stack.Prov.Add(chatopstest.Answer("dm answer"), chatopstest.Answer("thread answer"), chatopstest.Answer("reply answer"))
			dm := h.fake.PostUserMessage("D1", "", "hello bot")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "D1", "channel_type": "im",
				"user": "UADMIN", "text": "hello bot", "ts": dm}), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the DM answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "D1", dm); return ok && b == "dm answer" })
			// A channel message that mentions the bot arrives as message and as
			// app_mention: it runs once.
			root := h.fake.PostUserMessage("C1", "", "<@"+slacktest.BotUserID+"> go")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "C1", "channel_type": "channel",
				"user": "UALLOWED", "text": "<@" + slacktest.BotUserID + "> go", "ts": root}), 0); err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the thread answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "C1", root); return ok && b == "thread answer" })
			// reply_without_mention: a plain reply in the bound thread continues it.
			reply := h.fake.PostUserMessage("C1", root, "and more")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "C1", "channel_type": "channel",
				"user": "UALLOWED", "text": "and more", "ts": reply, "thread_ts": root}), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the reply answer", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if b, _ := blockText(t, m); b == "reply answer" {
						return true
					}
				}
				return false
			})
			// The bot's own messages are ignored.
			if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "C1", "channel_type": "channel",
				"user": slacktest.BotUserID, "bot_id": slacktest.BotID, "text": "echo", "ts": h.fake.PostUserMessage("C1", root, "echo"), "thread_ts": root}), 0); err != nil {
				t.Fatal(err)
			}
			time.Sleep(200 * time.Millisecond)
			if n := len(h.stack.Prov.Requests()); n != 3 {
				t.Fatalf("%d runs, want 3", n)
			}
		})

		t.Run("not allowed: ephemeral refusal, nothing runs", func(t *testing.T) {
			h := start(t, st, options{})
			root := h.fake.PostUserMessage("C1", "", "hi")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("USTRANGER", "C1", root, "", "hi")), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the refusal", func() bool {
				c := h.fake.Calls("chat.postEphemeral")
				return len(c) == 1 && c[0].Form.Get("user") == "USTRANGER" && strings.Contains(c[0].Form.Get("text"), "not allowed")
			})
			if n := len(h.stack.Prov.Requests()); n != 0 {
				t.Fatalf("%d runs", n)
			}
		})

		t.Run("approval buttons: approvers only, the answer reaches the agent", func(t *testing.T) {
			h := start(t, st, options{})
			got := make(chan agent.InteractionResponse, 1)
			h.stack.Prov.Add(chatopstest.Asking("toolu_01", "make deploy", got, "Deployed."))
			root := h.fake.PostUserMessage("C1", "", "deploy")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "deploy")), 0); err != nil {
				t.Fatal(err)
			}
			var card slacktest.Message
			chatopstest.WaitFor(t, "the card", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if b, _ := blockText(t, m); strings.Contains(b, "make deploy") && len(buttons(t, m)) == 4 {
						card = m
						return true
					}
				}
				return false
			})
			bs := buttons(t, card)
			if bs[0].ID != chatops.ButtonApprove || bs[1].Label != "Approve for session" || bs[3].Label != "Stop turn" {
				t.Fatalf("buttons %+v", bs)
			}
			// UALLOWED may run but not approve: ephemeral refusal.
			env, _ := h.fake.Envelope("interactive", blockActions(h.fake, "UALLOWED", "C1", root, bs[0]), 0)
			if _, err := h.fake.WaitAck(env, 3*time.Second); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the refusal", func() bool {
				for _, c := range h.fake.Calls("chat.postEphemeral") {
					if c.Form.Get("user") == "UALLOWED" && c.Form.Get("thread_ts") == root {
						return true
					}
				}
				return false
			})
			select {
			case r := <-got:
				t.Fatalf("a refused click reached the agent: %+v", r)
			default:
			}
			if _, err := h.fake.Envelope("interactive", blockActions(h.fake, "UAPPROVER", "C1", root, bs[0]), 0); err != nil {
				t.Fatal(err)
			}
			select {
			case r := <-got:
				if r.InteractionID != "toolu_01" || r.Decision != agent.DecisionApprove || r.By != "slack:UAPPROVER" {
					t.Fatalf("response %+v", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the approval did not reach the agent")
			}
			chatopstest.WaitFor(t, "the updated card and the final answer", func() bool {
				m, _ := h.fake.Message("C1", card.TS)
				b, _ := blockText(t, m)
				_, ans, ok := finalAnswer(t, h.fake, "C1", root)
				return strings.Contains(b, "**Approved** by <@UAPPROVER>") && len(buttons(t, m)) == 0 && ok && ans == "Deployed."
			})
		})

		t.Run("question: modal within the trigger's life, empty answer refused", func(t *testing.T) {
			h := start(t, st, options{})
			got := make(chan agent.InteractionResponse, 1)
			h.stack.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "ask-1", Kind: agent.KindQuestion,
					Questions: []agent.Question{{ID: "q1", Text: "Which branch?"}}}})
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
			click := blockActions(h.fake, "UAPPROVER", "C1", root, answerBtn)
			clicked := time.Now()
			if _, err := h.fake.Envelope("interactive", click, 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "views.open", func() bool { return len(h.fake.Views()) == 1 })
			opens := h.fake.Calls("views.open")
			if d := opens[0].At.Sub(clicked); d > 3*time.Second || opens[0].Error != "" || opens[0].Bearer != slacktest.BotToken {
				t.Fatalf("views.open after %s: %+v", d, opens[0])
			}
			var view struct {
				CallbackID      string `json:"callback_id"`
				PrivateMetadata string `json:"private_metadata"`
				Blocks          []struct {
					BlockID string `json:"block_id"`
				} `json:"blocks"`
			}
			if err := json.Unmarshal(h.fake.Views()[0], &view); err != nil || len(view.Blocks) != 1 || view.Blocks[0].BlockID != "q:q1" {
				t.Fatalf("view %s (%v)", h.fake.Views()[0], err)
			}
			submit := func(answer string) json.RawMessage {
				p := map[string]any{"type": "view_submission", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UAPPROVER"},
					"view": map[string]any{"id": "V1", "callback_id": view.CallbackID, "private_metadata": view.PrivateMetadata,
						"state": map[string]any{"values": map[string]any{"q:q1": map[string]any{"answer": map[string]any{"type": "plain_text_input", "value": answer}}}}}}
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
			if ack := submit("  "); !strings.Contains(string(ack), `"response_action":"errors"`) || !strings.Contains(string(ack), "q:q1") {
				t.Fatalf("empty answer ack %s", ack)
			}
			if ack := submit("release/2.0"); strings.Contains(string(ack), "errors") {
				t.Fatalf("ack %s", ack)
			}
			select {
			case r := <-got:
				if r.InteractionID != "ask-1" || r.Decision != agent.DecisionAnswer || r.Answers["q1"] != "release/2.0" {
					t.Fatalf("response %+v", r)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the answer did not reach the agent")
			}
			// A trigger used after 3 s is refused by the fake, like Slack.
			_ = click
		})

		t.Run("slash command", func(t *testing.T) {
			h := start(t, st, options{})
			env, err := h.fake.Envelope("slash_commands", map[string]any{"command": "/threadline", "text": "help", "team_id": slacktest.TeamID,
				"channel_id": "C1", "user_id": "UALLOWED", "trigger_id": h.fake.NewTrigger()}, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.fake.WaitAck(env, 3*time.Second); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the help reply", func() bool {
				c := h.fake.Calls("chat.postEphemeral")
				return len(c) == 1 && strings.Contains(c[0].Form.Get("text"), "`fork`")
			})
			// A request starts a new thread.
			h.stack.Prov.Add(chatopstest.Answer("slashed"))
			if _, err := h.fake.Envelope("slash_commands", map[string]any{"command": "/threadline", "text": "summarize the repo", "team_id": slacktest.TeamID,
				"channel_id": "C1", "user_id": "UALLOWED"}, 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the answer in a new thread", func() bool {
				for _, m := range h.fake.Messages() {
					if m.ThreadTS == "" && strings.Contains(m.Text, "asked: summarize the repo") {
						_, body, ok := finalAnswer(t, h.fake, "C1", m.TS)
						return ok && body == "slashed"
					}
				}
				return false
			})
		})

		t.Run("reconnect after disconnect", func(t *testing.T) {
			h := start(t, st, options{})
			h.fake.Disconnect()
			time.Sleep(300 * time.Millisecond)
			if err := h.fake.WaitConnected(10 * time.Second); err != nil {
				t.Fatal(err)
			}
			h.stack.Prov.Add(chatopstest.Answer("still here"))
			root := h.fake.PostUserMessage("C1", "", "hi")
			chatopstest.WaitFor(t, "a delivered envelope", func() bool {
				env, err := h.fake.Envelope("events_api", callback("EvReconnect"+root, mention("UALLOWED", "C1", root, "", "hi")), 0)
				if err != nil {
					return false
				}
				_, err = h.fake.WaitAck(env, time.Second)
				return err == nil
			})
			chatopstest.WaitFor(t, "the answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "C1", root); return ok && b == "still here" })
		})
	})
}
