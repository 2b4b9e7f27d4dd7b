package slack_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestSlackLogCommand: `log` in a chat's thread uploads the chat's whole
// transcript in that thread as <chat>-log.md: the prompt and who asked, the
// text, the tool call with its input and its output (a configured secret in
// it redacted), the run's end; in a thread with no chat it says so.
func TestSlackLogCommand(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		const secret = "sk-live-0123456789abcdefLOG"
		h := start(t, st, options{redact: redact.New(secret)})
		h.stack.Prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Reading the config."})
			emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"cat .env"}`)}})
			emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Output: "API_KEY=" + secret + "\n```\nnot closed"}})
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "The key is set."})
			emit(agent.Event{Type: agent.EventRunCompleted, Usage: &agent.Usage{InputTokens: 10, OutputTokens: 5}})
			return nil
		})
		root := h.fake.Say(slacktest.Said{User: "UALLOWED", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> check the config"})
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "check the config")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the turn's end", func() bool {
			for _, m := range h.fake.Thread("C1", root) {
				if _, ctx := blockText(t, m); m.User == slacktest.BotUserID && len(ctx) > 0 && strings.HasPrefix(ctx[len(ctx)-1], "Done") {
					return true
				}
			}
			return false
		})
		if n := len(h.fake.Files()); n != 0 {
			t.Fatalf("%d files before log", n)
		}
		ts := h.fake.Say(slacktest.Said{User: "UALLOWED", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> log"})
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", ts, root, "log")), 0); err != nil {
			t.Fatal(err)
		}
		var files []slacktest.File
		chatopstest.WaitFor(t, "the log's upload", func() bool { files = h.fake.Files(); return len(files) == 1 })
		f := files[0]
		if f.Channel != "C1" || f.ThreadTS != root || !strings.HasSuffix(f.Name, "-log.md") {
			t.Fatalf("uploaded %q in %s/%s, want *-log.md in C1/%s", f.Name, f.Channel, f.ThreadTS, root)
		}
		doc := string(f.Content)
		logHas(t, doc,
			"**Prompt** by slack:UALLOWED",
			"> check the config",
			"agent fake, model m1",
			"Reading the config.",
			"### Tool call: Bash",
			"\"command\": \"cat .env\"",
			"````\nAPI_KEY="+redact.Mask+"\n```\nnot closed\n````\n",
			"The key is set.",
			"**Run completed**",
			"10 tokens in, 5 out",
		)
		if strings.Contains(doc, secret) {
			t.Errorf("the secret is in the log:\n%s", doc)
		}

		// A thread with no chat.
		other := h.fake.Say(slacktest.Said{User: "UALLOWED", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> log"})
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", other, "", "log")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the answer in a thread with no chat", func() bool {
			for _, c := range h.fake.Calls("") {
				if strings.Contains(c.Form.Get("text")+string(c.JSON), "There is no chat in this thread yet.") {
					return true
				}
			}
			return false
		})
		if n := len(h.fake.Files()); n != 1 {
			t.Fatalf("%d files, want the one log", n)
		}
	})
}

// logHas fails t for each of wants that doc lacks.
func logHas(t *testing.T, doc string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(doc, w) {
			t.Errorf("the log lacks %q:\n%s", w, doc)
		}
	}
}
