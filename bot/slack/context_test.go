package slack_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// ask mentions the bot in the thread (a real message in the fake, then its
// app_mention event) and returns the prompt the agent got, after its turn.
func ask(t *testing.T, h *harness, root, text string) string {
	t.Helper()
	n := len(h.stack.Prov.Requests())
	h.stack.Prov.Add(chatopstest.Answer("on it"))
	ts := h.fake.Say(slacktest.Said{User: "UALLOWED", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> " + text})
	if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", ts, root, text)), 0); err != nil {
		t.Fatal(err)
	}
	chatopstest.WaitFor(t, "the agent's request", func() bool { return len(h.stack.Prov.Requests()) > n })
	chatopstest.WaitFor(t, "the turn's end", func() bool {
		for _, m := range h.fake.Thread("C1", root) {
			if m.TS > ts && m.User == slacktest.BotUserID {
				if _, ctx := blockText(t, m); len(ctx) > 0 && strings.HasPrefix(ctx[len(ctx)-1], "Done") {
					return true
				}
			}
		}
		return false
	})
	return h.stack.Prov.Requests()[n].Prompt
}

// chat posts a message in the thread that does not address the bot, and
// delivers its message event.
func chat(t *testing.T, h *harness, root, user, text string) {
	t.Helper()
	ts := h.fake.Say(slacktest.Said{User: user, Channel: "C1", ThreadTS: root, Text: text})
	if _, err := h.fake.Envelope("events_api", callback(eventID(), map[string]any{"type": "message", "channel": "C1", "channel_type": "channel",
		"user": user, "text": text, "ts": ts, "thread_ts": root}), 0); err != nil {
		t.Fatal(err)
	}
}

// inOrder fails unless s holds each of want, in order.
func inOrder(t *testing.T, s string, want ...string) {
	t.Helper()
	at := 0
	for _, w := range want {
		i := strings.Index(s[at:], w)
		if i < 0 {
			t.Fatalf("prompt lacks %q (in order):\n%s", w, s)
		}
		at += i + len(w)
	}
}

// TestSlackThreadContext: through the Slack fake, a chat started in a thread
// with three people's messages and one of the bot's gets them in order,
// with display names from users.info, times, a shared file's name and the
// bot's marked; a configured secret in one is scrubbed. What is said
// meanwhile without a mention comes with the next mention, once.
func TestSlackThreadContext(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		const secret = "sk-live-0123456789abcdef"
		h := start(t, st, options{redact: redact.New(secret)})
		h.fake.AddUser(slacktest.User{ID: "UALICE", Name: "alice", RealName: "Alice Liddell", DisplayName: "alice"})
		h.fake.AddUser(slacktest.User{ID: "UBOB", Name: "bob", RealName: "Bob Builder"})
		h.fake.AddUser(slacktest.User{ID: "UCAROL", Name: "carol", DisplayName: "Carol"})
		h.fake.AddUser(slacktest.User{ID: "UALLOWED", Name: "al", DisplayName: "Al"})
		root := h.fake.Say(slacktest.Said{User: "UALICE", Channel: "C1", Text: "The login page returns 500 since this morning &amp; <@UBOB> saw it too."})
		file, _ := h.fake.AddFile("error.log", "text/plain", []byte("panic: nil session"))
		h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", ThreadTS: root, Text: "Same here, log attached.", Files: []string{file}})
		h.fake.Say(slacktest.Said{User: slacktest.BotUserID, BotID: slacktest.BotID, Channel: "C1", ThreadTS: root, Text: "I looked at the session store earlier."})
		h.fake.Say(slacktest.Said{User: "UCAROL", Channel: "C1", ThreadTS: root, Text: "It started after the deploy; the key was " + secret})

		first := ask(t, h, root, "can you fix this?")
		inOrder(t, first,
			"Earlier in this thread",
			"alice (UALICE), ", " UTC:\nThe login page returns 500 since this morning & @Bob Builder saw it too.",
			"Bob Builder (UBOB), ", "Same here, log attached.\n(attached: error.log)",
			"Threadline (you, earlier), ", "I looked at the session store earlier.",
			"Carol (UCAROL), ", "It started after the deploy; the key was "+redact.Mask,
			"\n\nRequest:\ncan you fix this?")
		if strings.Contains(first, secret) {
			t.Fatalf("the secret reached the agent:\n%s", first)
		}
		if strings.Count(first, "can you fix this?") != 1 {
			t.Errorf("the request is repeated in its context:\n%s", first)
		}

		chat(t, h, root, "UBOB", "bob: I rolled back the deploy")
		chat(t, h, root, "UCAROL", "carol: still 500 for me")
		second := ask(t, h, root, "and now?")
		block, req, _ := strings.Cut(second, "\n\nRequest:\n")
		if req != "and now?" || !strings.HasPrefix(block, "Said in this thread since your last turn") {
			t.Fatalf("second prompt:\n%s", second)
		}
		inOrder(t, block, "Bob Builder (UBOB)", "bob: I rolled back the deploy", "Carol (UCAROL)", "carol: still 500 for me")
		for _, old := range []string{"login page", "can you fix this?", "on it", "session store"} {
			if strings.Contains(block, old) {
				t.Errorf("the meanwhile block repeats %q:\n%s", old, block)
			}
		}
		if third := ask(t, h, root, "thanks"); third != "thanks" {
			t.Errorf("third prompt repeats what was said before the second:\n%s", third)
		}
		// users.info was asked once per person (cached).
		seen := map[string]int{}
		for _, c := range h.fake.Calls("users.info") {
			seen[c.Form.Get("user")]++
		}
		for u, n := range seen {
			if n != 1 {
				t.Errorf("users.info for %s: %d calls", u, n)
			}
		}
	})
}

// TestSlackThreadContextPages: a thread longer than one page of
// conversations.replies is read page by page (cursor), all of it in order;
// under the default bound the newest are kept and the cut is said.
func TestSlackThreadContextPages(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	for _, tc := range []struct {
		name  string
		bytes int
	}{{"all", 1 << 20}, {"bounded", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			h := start(t, st, options{contextBytes: tc.bytes})
			h.fake.AddUser(slacktest.User{ID: "UDAVE", Name: "dave"})
			root := h.fake.Say(slacktest.Said{User: "UDAVE", Channel: "C1", Text: "message 000"})
			for i := 1; i < 450; i++ {
				h.fake.Say(slacktest.Said{User: "UDAVE", Channel: "C1", ThreadTS: root, Text: fmt.Sprintf("message %03d", i)})
			}
			got := ask(t, h, root, "summarize")
			calls := h.fake.Calls("conversations.replies")
			if len(calls) != 3 || calls[1].Form.Get("cursor") == "" || calls[0].Form.Get("latest") == "" {
				t.Errorf("%d conversations.replies calls, want 3 pages with a cursor and latest: %+v", len(calls), calls)
			}
			if tc.bytes > 0 {
				want := make([]string, 0, 451)
				for i := range 450 {
					want = append(want, "dave (UDAVE), ", fmt.Sprintf("message %03d", i))
				}
				inOrder(t, got, append(want, "Request:\nsummarize")...)
				return
			}
			block, _, _ := strings.Cut(got, "\n\nRequest:\n")
			if len(block) > 16384 || !strings.Contains(block, "message 449") || strings.Contains(block, "message 000") ||
				!strings.Contains(block, " earlier messages left out]") {
				t.Errorf("bounded context (%d bytes) keeps the oldest or says no cut:\n%.600s", len(block), block)
			}
		})
	}
}

// TestSlackThreadContextOff: thread_context off in the channel: the agent
// gets the request alone and the thread is not read.
func TestSlackThreadContextOff(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{channels: map[string]slackbot.ChannelConfig{
		"C1": {Agent: "fake", Allow: []string{"UALLOWED"}, ThreadContext: "off"},
	}})
	root := h.fake.Say(slacktest.Said{User: "UALICE", Channel: "C1", Text: "private musings"})
	if got := ask(t, h, root, "hello"); got != "hello" {
		t.Errorf("prompt %q", got)
	}
	chat(t, h, root, "UBOB", "more musings")
	if got := ask(t, h, root, "again"); got != "again" {
		t.Errorf("second prompt %q", got)
	}
	if n := len(h.fake.Calls("conversations.replies")); n != 0 {
		t.Errorf("the thread was read %d times", n)
	}
}

// TestSlackThreadContextUnreadable: Slack refusing the thread
// (missing_scope) costs the context, not the prompt; the thread hears it.
func TestSlackThreadContextUnreadable(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{})
	root := h.fake.Say(slacktest.Said{User: "UALICE", Channel: "C1", Text: "earlier"})
	h.fake.FailNext("conversations.replies", 1, "missing_scope")
	if got := ask(t, h, root, "do it"); got != "do it" {
		t.Errorf("prompt %q", got)
	}
	found := false
	for _, m := range h.fake.Thread("C1", root) {
		found = found || strings.Contains(m.Text, "could not read this thread's earlier messages")
	}
	if !found {
		t.Error("the thread was not told")
	}
}

// TestSlackFetchThreadFile: through the Slack fake and the chat's thread
// tools (chatops.Desk.ToolThread), a file posted in the chat's thread is
// fetched by name with the same bytes (url_private_download with the bot
// token); of two files with one name the newest comes, and the note says
// so; an unknown name lists the thread's files; a file of another thread
// is not reached. An image sent with send_file is posted named for its type
// and comes back the same.
func TestSlackFetchThreadFile(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{})
	h.fake.AddUser(slacktest.User{ID: "UBOB", Name: "bob", RealName: "Bob Builder"})
	root := h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", Text: "the crash"})
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR\x00\x00\x00\x02\x00\x00\x00\x03binary\x00\xff")
	shot, _ := h.fake.AddFile("screen.png", "image/png", png)
	old, _ := h.fake.AddFile("error.log", "text/plain", []byte("first log"))
	newer, _ := h.fake.AddFile("error.log", "text/plain", []byte("second log"))
	h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", ThreadTS: root, Text: "screenshot and log", Files: []string{shot, old}})
	h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", ThreadTS: root, Text: "newer log", Files: []string{newer}})
	other := h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", Text: "another thread"})
	secret, _ := h.fake.AddFile("other.txt", "text/plain", []byte("not yours"))
	h.fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", ThreadTS: other, Text: "elsewhere", Files: []string{secret}})

	ask(t, h, root, "look at the screenshot")
	chatID := agent.ChatID(h.stack.Prov.Requests()[0].ChatID)
	ctx := context.Background()
	th, ok := h.threads.ToolThread(ctx, chatID)
	if !ok {
		t.Fatal("the chat has no tool thread")
	}
	read := func(name string) (string, string) {
		t.Helper()
		rc, tf, err := th.Fetch(ctx, name)
		if err != nil {
			t.Fatalf("fetch %s: %v", name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		if tf.Name != name || tf.Size != int64(len(b)) {
			t.Errorf("fetch %s: file %+v, %d bytes read", name, tf, len(b))
		}
		return string(b), tf.Note
	}
	if got, note := read("screen.png"); got != string(png) || note != "" {
		t.Errorf("screen.png: %q (note %q)", got, note)
	}
	got, note := read("error.log")
	if got != "second log" || !strings.Contains(note, "2 files in this thread are called error.log; this is the newest") || !strings.Contains(note, "Bob Builder") {
		t.Errorf("error.log: %q, note %q", got, note)
	}
	// send_file's image: posted under a name Slack takes its type from,
	// with its title, and listed and fetched back like any file.
	if _, err := th.SendFile(ctx, threadtools.File{Name: "chart", Title: "Chart", MIMEType: "image/png", Content: png, Size: int64(len(png))}); err != nil {
		t.Fatal(err)
	}
	var sent []slacktest.File
	for _, f := range h.fake.Files() {
		if f.ThreadTS == root && f.Name == "chart.png" {
			sent = append(sent, f)
		}
	}
	if len(sent) != 1 || sent[0].Title != "Chart" || sent[0].MimeType != "image/png" || string(sent[0].Content) != string(png) {
		t.Fatalf("the image posted: %+v", sent)
	}
	if got, _ := read("chart.png"); got != string(png) {
		t.Errorf("chart.png fetched back: %q", got)
	}
	_, _, err := th.Fetch(ctx, "other.txt")
	if err == nil || !strings.Contains(err.Error(), `no file called "other.txt"`) || !strings.Contains(err.Error(), "screen.png, error.log") {
		t.Errorf("another thread's file: %v", err)
	}
}
