package main

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/store"
)

// TestChatsCommand: threadline chats lists the chats of the default SQLite
// store with their first message and how to reopen one; --json prints one
// object per chat; a fresh store says how to start.
func TestChatsCommand(t *testing.T) {
	dir := isolate(t)
	code, out, _, err := run(t, "", "chats")
	if code != 0 || err != nil || !strings.Contains(out, "No chats yet") {
		t.Fatalf("empty: %d %q %v", code, out, err)
	}
	st, err := store.OpenAndMigrate(t.Context(), filepath.Join(dir, "data", "threadline", "threadline.db"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	c := store.Chat{ID: "chat-1", Agent: "claude", Mode: "default", Cwd: dir}
	if err := st.CreateChat(t.Context(), &c); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendEvents(t.Context(), []store.Event{{ChatID: agent.ChatID(c.ID), Seq: 1, Type: "user.message", Payload: []byte(`{"text":"fix the build","by":"console:alice"}`)}}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, out, _, err = run(t, "", "chats")
	if code != 0 || err != nil {
		t.Fatalf("chats: %d %v", code, err)
	}
	for _, want := range []string{"chat-1", "claude", "console:alice", "fix the build", "threadline chat --chat ID"} {
		if !strings.Contains(out, want) {
			t.Errorf("chats lacks %q:\n%s", want, out)
		}
	}
	code, out, _, err = run(t, "", "chats", "--json", "-n", "5")
	var line struct {
		ID, Title, Agent string
		Events           int64
	}
	if code != 0 || err != nil || json.Unmarshal([]byte(out), &line) != nil || line.ID != "chat-1" || line.Title != "fix the build" || line.Events != 1 {
		t.Errorf("--json: %d %v %q", code, err, out)
	}
	if code, out, _, _ := run(t, "", "chats", "--help"); code != 0 || !strings.Contains(out, "threadline chats") {
		t.Errorf("--help: %d %q", code, out)
	}
}
