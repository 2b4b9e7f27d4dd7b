package slack_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestSlackFetchThreadFile: through the Slack fake and the chat's thread
// tools (chatops.Desk.ToolThread), a file posted in the chat's thread is
// fetched by name with the same bytes (url_private_download with the bot
// token); of two files with one name the newest comes, and the note says
// so; an unknown name lists the thread's files; a file of another thread
// is not reached.
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
	_, _, err := th.Fetch(ctx, "other.txt")
	if err == nil || !strings.Contains(err.Error(), `no file called "other.txt"`) || !strings.Contains(err.Error(), "screen.png, error.log") {
		t.Errorf("another thread's file: %v", err)
	}
}
