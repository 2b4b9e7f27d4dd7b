package slack_test

import (
	"strings"
	"testing"
	"time"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestAgentTextIsEscaped: an answer that tries a mass mention, a user
// mention and a disguised link arrives escaped in every call that carries
// it, streamed or not; the bot's own mention of the requester still works.
func TestAgentTextIsEscaped(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	hostile := []string{"<!channel> hi ", "<@U123> ", "<https://evil.example|https://good.example>", " & <!here>"}
	// fields returns the text-carrying fields of a call.
	fields := func(c slacktest.Call) []string {
		var out []string
		for _, k := range []string{"text", "markdown_text", "blocks", "chunks"} {
			if v := c.Form.Get(k); v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	check := func(t *testing.T, h *harness, methods ...string) {
		t.Helper()
		carried := map[string]int{}
		for _, c := range h.fake.Calls("") {
			for _, v := range fields(c) {
				v = strings.ReplaceAll(v, `\u0026`, "&")
				if !strings.Contains(v, "evil.example") && !strings.Contains(v, "hi ") {
					continue
				}
				for _, bad := range []string{"<!channel>", "<!here>", "<@U123>", "<https://evil"} {
					if strings.Contains(v, bad) {
						t.Errorf("%s carried %q unescaped: %s", c.Method, bad, v)
					}
				}
				if strings.Contains(v, "channel") && !strings.Contains(v, "&lt;!channel&gt;") {
					t.Errorf("%s: %s", c.Method, v)
				}
				carried[c.Method]++
			}
		}
		for _, m := range methods {
			if carried[m] == 0 {
				t.Errorf("no %s call carried the answer (calls: %v)", m, carried)
			}
		}
	}

	t.Run("streamed", func(t *testing.T) {
		h := start(t, st, options{streaming: "auto"})
		h.stack.Prov.Add(chatopstest.Slow(append(hostile, "\n\nmore text after it"), 40*time.Millisecond))
		root := h.fake.PostUserMessage("C1", "", "go")
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the answer", func() bool { _, _, ok := finalAnswer(t, h.fake, "C1", root); return ok })
		check(t, h, "chat.appendStream")
		if len(h.fake.Calls("chat.startStream")) == 0 || len(h.fake.Calls("chat.stopStream")) == 0 {
			t.Fatal("the answer was not streamed")
		}
	})

	t.Run("posted and edited", func(t *testing.T) {
		h := start(t, st, options{})
		h.stack.Prov.Add(chatopstest.Slow(append(hostile, "\n\nmore text after it"), 40*time.Millisecond))
		root := h.fake.PostUserMessage("C1", "", "go")
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the answer", func() bool { _, _, ok := finalAnswer(t, h.fake, "C1", root); return ok })
		check(t, h, "chat.update")
		_, body, _ := finalAnswer(t, h.fake, "C1", root)
		if want := "&lt;!channel&gt; hi &lt;@U123&gt; &lt;https://evil.example|https://good.example&gt; &amp; &lt;!here&gt;"; !strings.HasPrefix(body, want) {
			t.Fatalf("final body %q, want it to start with %q", body, want)
		}
	})

	t.Run("the bot's own mention of the requester works", func(t *testing.T) {
		h := start(t, st, options{})
		h.stack.Prov.Add(chatopstest.Answer("done"))
		if _, err := h.fake.Envelope("slash_commands", map[string]any{"command": "/threadline", "text": "summarize <!here>", "team_id": slacktest.TeamID,
			"channel_id": "C1", "user_id": "UALLOWED"}, 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the thread's first post", func() bool {
			for _, m := range h.fake.Messages() {
				if m.ThreadTS == "" && strings.Contains(m.Text, "asked: summarize") {
					if !strings.HasPrefix(m.Text, "<@UALLOWED> asked: summarize &lt;!here&gt;") {
						t.Fatalf("first post %q", m.Text)
					}
					return true
				}
			}
			return false
		})
	})

	t.Run("allowed by the operator", func(t *testing.T) {
		h := start(t, st, options{allowMentions: true})
		defer slackbot.New(slackbot.Config{AppToken: slacktest.AppToken, BotToken: slacktest.BotToken}, nil, nil) // back to the default
		h.stack.Prov.Add(chatopstest.Answer("<!here> ping"))
		root := h.fake.PostUserMessage("C1", "", "go")
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the answer", func() bool { _, _, ok := finalAnswer(t, h.fake, "C1", root); return ok })
		if _, b, _ := finalAnswer(t, h.fake, "C1", root); b != "<!here> ping" {
			t.Fatalf("answer %q, want it as the agent wrote it", b)
		}
	})
}
