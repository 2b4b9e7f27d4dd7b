package slack_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// homeText is the text of the latest App Home view published for user.
func homeText(t testing.TB, fake *slacktest.Server, user string) string {
	t.Helper()
	views := fake.Home(user)
	if len(views) == 0 {
		return ""
	}
	var v struct {
		Blocks []struct {
			Text struct {
				Text string `json:"text"`
			} `json:"text"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(views[len(views)-1], &v); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, bl := range v.Blocks {
		b.WriteString(bl.Text.Text + "\n")
	}
	return b.String()
}

// TestAssistantSurface: an assistant thread gets the configured suggested
// prompts when it starts and its first prompt as title, and is a chat like
// any thread; the App Home tab shows the person's running run with a link
// when opened, and is published again when the run ends.
func TestAssistantSurface(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	prompts := slackbot.AssistantConfig{PromptsTitle: "Try", Prompts: []slackbot.SuggestedPrompt{
		{Title: "Review", Message: "Review my last commit"}, {Title: "Explain", Message: "Explain this repository"}}}
	h := start(t, st, options{streaming: "auto", assistant: prompts, appHome: true})
	release := make(chan struct{})
	h.stack.Prov.Add(chatopstest.Gated(release, "Looking at the commit."))

	// The split view opens: suggested prompts.
	thread := h.fake.PostUserMessage("D1", "", "")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": "UADMIN", "channel_id": "D1", "thread_ts": thread, "context": map[string]any{}}}), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the suggested prompts", func() bool { return len(h.fake.Prompts("D1", thread).Prompts) == 2 })
	if sp := h.fake.Prompts("D1", thread); sp.Title != "Try" || sp.Prompts[0].Message != "Review my last commit" {
		t.Fatalf("prompts %+v", sp)
	}
	// The first prompt in it: a chat, titled after the prompt.
	msg := h.fake.PostUserMessage("D1", thread, "Review my last commit")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "D1", "channel_type": "im",
		"user": "UADMIN", "text": "Review my last commit", "ts": msg, "thread_ts": thread}), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the title", func() bool { return h.fake.Title("D1", thread) == "Review my last commit" })
	chatopstest.WaitFor(t, "the streamed answer", func() bool {
		for _, m := range h.fake.Thread("D1", thread) {
			if strings.Contains(m.Markdown, "Looking at the commit.") {
				return true
			}
		}
		return false
	})
	// The home tab, opened while the run runs.
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_home_opened", "user": "UADMIN", "channel": "D1", "tab": "home"}), 0); err != nil {
		t.Fatal(err)
	}
	link := "https://fake.slack.com/archives/D1/p" + strings.ReplaceAll(thread, ".", "")
	chatopstest.WaitFor(t, "the home tab with the running run", func() bool {
		s := homeText(t, h.fake, "UADMIN")
		return strings.Contains(s, "Running now") && strings.Contains(s, "<"+link+"|Review my last commit>")
	})
	close(release)
	chatopstest.WaitFor(t, "the home tab after the run", func() bool {
		s := homeText(t, h.fake, "UADMIN")
		return !strings.Contains(s, "Running now") && strings.Contains(s, "Your recent chats") && strings.Contains(s, "Review my last commit> · Done in")
	})
	if n := len(h.fake.Home("UADMIN")); n > 3 {
		t.Errorf("%d home publishes for one open and one run", n)
	}
	if len(h.fake.Home("UALLOWED")) != 0 {
		t.Error("another person's home was published")
	}
}

// TestAssistantTitleScrubbed: a secret in the first prompt of an assistant
// thread does not reach its title or the home tab.
func TestAssistantTitleScrubbed(t *testing.T) {
	const secret = "xoxb-TITLE-secret-123"
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{streaming: "auto", appHome: true, redact: redact.New(secret)})
	h.stack.Prov.Add(chatopstest.Answer("ok"))
	thread := h.fake.PostUserMessage("D1", "", "")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "assistant_thread_started",
		"assistant_thread": map[string]any{"user_id": "UADMIN", "channel_id": "D1", "thread_ts": thread}}), 0); err != nil {
		t.Fatal(err)
	}
	msg := h.fake.PostUserMessage("D1", thread, "use "+secret+" please")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "D1", "channel_type": "im",
		"user": "UADMIN", "text": "use " + secret + " please", "ts": msg, "thread_ts": thread}), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the title", func() bool { return h.fake.Title("D1", thread) != "" })
	if got := h.fake.Title("D1", thread); strings.Contains(got, "TITLE-secret") || got != "use "+redact.Mask+" please" {
		t.Fatalf("title %q", got)
	}
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_home_opened", "user": "UADMIN", "tab": "home"}), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the home tab", func() bool { return strings.Contains(homeText(t, h.fake, "UADMIN"), "please") })
	if s := homeText(t, h.fake, "UADMIN"); strings.Contains(s, "TITLE-secret") {
		t.Fatalf("home %q", s)
	}
}

// TestAppHomeAfterRestart: the App Home tab comes from the store: a bot
// started after a restart (a new bot over the same store, a new Slack)
// publishes, when the tab is opened, the person's threads from before with
// links and how their runs ended, before any run starts again; a run then
// started shows under "Running now" and its end is published again. Another
// person's tab lists none of them.
func TestAppHomeAfterRestart(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		h := start(t, st, options{streaming: "auto", appHome: true})
		h.stack.Prov.Add(chatopstest.Answer("first answer"))
		h.stack.Prov.Add(chatopstest.Answer("second answer"))
		var roots []string
		for i, text := range []string{"fix the build", "write the docs"} {
			root := h.fake.PostUserMessage("C1", "", text)
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UADMIN", "C1", root, "", text)), 0); err != nil {
				t.Fatal(err)
			}
			want := []string{"first answer", "second answer"}[i]
			chatopstest.WaitFor(t, "the answer "+want, func() bool {
				m, _, ok := finalAnswer(t, h.fake, "C1", root)
				return ok && strings.Contains(m.Markdown, want)
			})
			roots = append(roots, root)
		}
		h.stop()

		// The restart: nothing ran yet, nobody prompted.
		h2 := start(t, st, options{streaming: "auto", appHome: true})
		if _, err := h2.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_home_opened", "user": "UADMIN", "tab": "home"}), 0); err != nil {
			t.Fatal(err)
		}
		link := func(root string) string {
			return "https://fake.slack.com/archives/C1/p" + strings.ReplaceAll(root, ".", "")
		}
		chatopstest.WaitFor(t, "the home tab after the restart", func() bool { return homeText(t, h2.fake, "UADMIN") != "" })
		s := homeText(t, h2.fake, "UADMIN")
		docs, build := strings.Index(s, "<"+link(roots[1])+"|write the docs> · Done in"), strings.Index(s, "<"+link(roots[0])+"|fix the build> · Done in")
		if !strings.Contains(s, "Your recent chats") || docs < 0 || build < 0 || docs > build || strings.Contains(s, "Running now") {
			t.Fatalf("home after the restart (newest first, both done):\n%s", s)
		}
		if _, err := h2.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_home_opened", "user": "UALLOWED", "tab": "home"}), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "another person's home tab", func() bool { return homeText(t, h2.fake, "UALLOWED") != "" })
		if s := homeText(t, h2.fake, "UALLOWED"); strings.Contains(s, "fix the build") || !strings.Contains(s, "Mention me") {
			t.Fatalf("another person's home lists the admin's threads:\n%s", s)
		}

		// A run in the old thread: running now, then done, published again
		// without the tab being opened.
		release := make(chan struct{})
		h2.stack.Prov.Add(chatopstest.Gated(release, "third answer"))
		if _, err := h2.fake.Envelope("events_api", callback(eventID(), mention("UADMIN", "C1", h2.fake.PostUserMessage("C1", roots[0], "again"), roots[0], "again")), 0); err != nil {
			t.Fatal(err)
		}
		chatopstest.WaitFor(t, "the running run on the home tab", func() bool {
			s := homeText(t, h2.fake, "UADMIN")
			return strings.Contains(s, "*Running now*\n⏳ <"+link(roots[0])+"|fix the build>")
		})
		close(release)
		chatopstest.WaitFor(t, "the home tab after the run", func() bool {
			s := homeText(t, h2.fake, "UADMIN")
			return !strings.Contains(s, "Running now") && strings.Contains(s, "*Your recent chats*\n• <"+link(roots[0])+"|fix the build> · Done in")
		})
		if n := len(h2.fake.Home("UADMIN")); n > 3 {
			t.Errorf("%d home publishes for one open and one run", n)
		}
	})
}

// TestAgentMessagingPrompts: with agent messaging, opening the Messages tab
// (app_home_opened, tab "messages") offers the suggested prompts there;
// app_context_changed is taken without a reply.
func TestAgentMessagingPrompts(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	prompts := slackbot.AssistantConfig{PromptsTitle: "Try", Prompts: []slackbot.SuggestedPrompt{{Title: "Explain", Message: "Explain this repository"}}}
	h := start(t, st, options{assistant: prompts})
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_context_changed", "user": "UADMIN", "channel": "D1",
		"context": map[string]any{"entities": []map[string]any{{"type": "slack#/types/channel_id", "value": "C1"}}}, "event_ts": "1.1"}), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "app_home_opened", "user": "UADMIN", "channel": "D1", "tab": "messages"}), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the suggested prompts", func() bool { return len(h.fake.Prompts("D1", "").Prompts) == 1 })
	if sp := h.fake.Prompts("D1", ""); sp.Title != "Try" || sp.Prompts[0].Message != "Explain this repository" {
		t.Fatalf("prompts %+v", sp)
	}
	if n := len(h.fake.Calls("chat.postMessage")); n != 0 {
		t.Errorf("%d posts", n)
	}
}
