package matrix_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
)

// TestLogCommandOnDendrite: `!threadline log` in a chat's thread posts the
// chat's transcript as an m.file in that thread, a secret in a tool's output
// redacted.
func TestLogCommandOnDendrite(t *testing.T) {
	logFlow(t, false)
}

// logSecret is a configured secret the log must not show.
const logSecret = "hunter2-l0g-s3cr3t-v4lue"

// logFlow runs a turn with a tool call whose output holds a configured
// secret, asks for the log in the thread and reads the file the bot posts
// (decrypted in an encrypted room, where it must be an encrypted file).
func logFlow(t *testing.T, encrypted bool) {
	w := newWorld(t, "sqlite")
	w.redact = redact.New(logSecret)
	w.startBot(encrypted)
	alice, bob := w.human(w.alice, encrypted), w.human(w.bob, encrypted)
	room := w.room(alice, bob, encrypted)
	w.prov.add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"cat .env"}`)}})
		emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Output: "KEY=" + logSecret}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "The key is set."})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	root := w.askDone(alice, room, "check the env", "The key is set.")
	alice.say(room, root, "!threadline log")
	var file *event.MessageEventContent
	alice.wait("the log file", waitLong, func(evs []*event.Event) bool {
		for _, p := range botPosts(evs, w.botUser.ID, room, root) {
			if c := msgContent(p); c != nil && c.MsgType == event.MsgFile && strings.HasSuffix(c.FileName, "-log.md") {
				file = c
				return true
			}
		}
		return false
	})
	doc := download(t, alice, file, encrypted)
	for _, want := range []string{"**Prompt** by matrix:" + string(w.alice.ID), "> check the env", "### Tool call: Bash", `"command": "cat .env"`,
		"KEY=" + redact.Mask, "The key is set.", "**Run completed**"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the log lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, logSecret) {
		t.Errorf("the secret is in the log:\n%s", doc)
	}
}

// download fetches a file the bot posted, decrypting it where it is an
// encrypted attachment (which it must be in an encrypted room).
func download(t *testing.T, h *human, c *event.MessageEventContent, encrypted bool) string {
	t.Helper()
	uri := c.URL
	if encrypted {
		if c.File == nil || c.URL != "" {
			t.Fatalf("the file in an encrypted room is not an encrypted attachment: %+v", c)
		}
		uri = c.File.URL
	}
	parsed, err := uri.Parse()
	if err != nil {
		t.Fatal(err)
	}
	data, err := h.cli.DownloadBytes(t.Context(), parsed)
	if err != nil {
		t.Fatal(err)
	}
	if c.File != nil {
		if err := c.File.DecryptInPlace(data); err != nil {
			t.Fatal(err)
		}
	}
	return string(data)
}
