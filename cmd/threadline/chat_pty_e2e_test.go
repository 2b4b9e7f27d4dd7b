//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/console/consoletest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestChatTerminalEndToEnd (issue 16.3) drives `threadline chat` on a
// pseudo-terminal with the real Claude CLI against the scripted Messages API:
// the line is edited with the arrow keys, a message typed during a turn is
// queued and runs next, an approval is answered at the prompt, /agent nosuch
// and an unknown command are refused,
// Up recalls the history (kept 0600 in the state directory), Ctrl-D quits.
func TestChatTerminalEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	srv := fakeapi.New(t,
		fakeapi.When("SLOW", fakeapi.Slow(60, 50*time.Millisecond)),
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "touch approved.txt && echo approved-run", "description": "Create approved.txt"})),
		fakeapi.Text("Hello", " from", " the fake", " API."),
	)
	cfg := e2eConfig(t, dir, bin, srv)
	p := consoletest.Open(t)
	done := make(chan error, 1)
	go func() { done <- cmdChat(context.Background(), []string{"--config", cfg}, p.Tty, p.Tty, p.Tty) }()
	p.Screen.Wait(t, "new chat")
	p.Screen.Wait(t, "> ")

	p.Type(t, "say helo", consoletest.Left, "l", consoletest.Enter) // helo, ←, l
	p.Screen.Wait(t, "Hello from the fake API.")
	p.Screen.Wait(t, "— done")

	p.Type(t, "SLOW", consoletest.Enter)
	p.Screen.Wait(t, "word02")
	p.Type(t, "then this", consoletest.Enter)
	p.Screen.Wait(t, "queued (1): then this")
	p.Screen.Wait(t, "— done") // SLOW's turn
	p.Screen.Wait(t, "> then this")
	p.Screen.Wait(t, "Hello from the fake API.")
	p.Screen.Wait(t, "— done")

	p.Type(t, "TOOL please", consoletest.Enter)
	p.Screen.Wait(t, "[y] approve")
	p.Type(t, "y", consoletest.Enter)
	p.Screen.Wait(t, "approved")
	p.Screen.Wait(t, "Tool result: approved-run")
	p.Screen.Wait(t, "— done")

	p.Type(t, "/agent nosuch", consoletest.Enter)
	p.Screen.Wait(t, "There is no such agent here. Valid agents:")
	p.Type(t, "/sttaus", consoletest.Enter)
	p.Screen.Wait(t, "Unknown command /sttaus: /help lists the commands.")

	p.Type(t, consoletest.Up, consoletest.Up, consoletest.Up, consoletest.Up, consoletest.Enter) // past /sttaus, /agent nosuch, TOOL please (the "y" is no history): "then this"
	p.Screen.Wait(t, "Hello from the fake API.")
	p.Screen.Wait(t, "— done")
	p.Type(t, consoletest.CtrlD)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
	case <-time.After(providertest.Scale(30 * time.Second)):
		t.Fatal("chat did not end on Ctrl-D")
	}

	var prompts []string // one request a turn, two with the tool call
	for _, r := range srv.MessageRequests() {
		prompts = append(prompts, r.Prompt())
	}
	if want := []string{"say hello", "SLOW", "then this", "TOOL please", "TOOL please", "then this"}; !slices.Equal(prompts, want) {
		t.Errorf("the agent was sent %q, want %q", prompts, want)
	}
	hist := filepath.Join(dir, "state", "threadline", "chat_history")
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if want := "say hello\nSLOW\nthen this\nTOOL please\n/agent nosuch\n/sttaus\nthen this\n"; string(b) != want {
		t.Errorf("history %q, want %q", b, want)
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v (%v)", fi.Mode(), err)
	}
	if strings.Contains(p.Screen.String(), "[D") && !strings.Contains(strings.Join(p.Screen.Rows(80), "\n"), "say hello") {
		t.Errorf("the arrow key reached the screen as text:\n%s", strings.Join(p.Screen.Rows(80), "\n"))
	}
}
