package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestChatNoAgentInstalled: with no agent CLI on PATH, chat (and run) say
// so with one line per missing default CLI and its install command, in the
// order they are tried, the others counted; with a CLI outside the
// defaults installed, they name it for --agent.
func TestChatNoAgentInstalled(t *testing.T) {
	dir := isolate(t)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	code, _, _, err := run(t, "", "chat")
	if code != 1 || err == nil {
		t.Fatalf("exit %d err %v", code, err)
	}
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	if !strings.HasPrefix(lines[0], "no agent CLI is installed (not found on PATH).") || lines[1] != "The default agents, tried in this order:" {
		t.Fatalf("message:\n%s", msg)
	}
	hints := map[string]string{
		"claude": "npm install -g @anthropic-ai/claude-code",
		"codex":  "npm install -g @openai/codex",
		"gemini": "npm install -g @google/gemini-cli",
	}
	for i, id := range defaultAgents {
		if !regexp.MustCompile(`^  ` + regexp.QuoteMeta(id) + `  +\S`).MatchString(lines[2+i]) {
			t.Errorf("line %d is %q, want agent %s and its install command", 2+i, lines[2+i], id)
		}
	}
	for id, hint := range hints {
		if !regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(id) + `  +` + regexp.QuoteMeta(hint) + `$`).MatchString(msg) {
			t.Errorf("no line for %s with %q:\n%s", id, hint, msg)
		}
	}
	// The other agents are counted, not listed: the first screen is for the
	// likely choices.
	if strings.Contains(msg, "  aider ") || !strings.Contains(msg, "other agents are known: `threadline agents --all` lists each with its install command") {
		t.Errorf("the other agents:\n%s", msg)
	}
	if strings.Contains(msg, "exec:") || strings.Contains(msg, "$PATH") {
		t.Errorf("lookup errors in the message:\n%s", msg)
	}

	if err := os.WriteFile(filepath.Join(bin, "aider"), []byte("#!/bin/sh\necho aider 0.80.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, _, err = run(t, "", "run", "hello")
	if err == nil || !strings.HasPrefix(err.Error(), "none of the default agents is installed (not found on PATH); aider can run here: pick one with --agent") ||
		strings.Contains(err.Error(), "  aider ") {
		t.Errorf("with aider installed: %v", err)
	}
}
