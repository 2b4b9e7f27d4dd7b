package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestRunVersionNotice: a CLI outside its verified versions gets a one-line
// notice in the chat at its first run there, and not at the next. The REAL
// Claude Code CLI runs behind a wrapper that reports version 9.9.9 (the
// descriptor is verified with another), against the scripted fake API in a
// loopback-only network namespace.
func TestRunVersionNotice(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	real := fakeapi.FindClaude(t)
	dir := isolate(t)
	wrapper := filepath.Join(dir, "claude")
	if err := os.WriteFile(wrapper, []byte("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '9.9.9 (Claude Code)'; exit 0; fi\nexec \""+real+"\" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	srv := fakeapi.New(t, fakeapi.Text("Hello", " there."))
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"agents":   map[string]any{"claude": map[string]any{"bin": wrapper, "env": srv.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
	})
	cfg := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfg, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	const notice = "Note: claude 9.9.9 has not been verified with Threadline"
	code, out, errOut, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "--cwd", dir, "--events", "jsonl", "hello")
	if code != 0 || err != nil {
		t.Fatalf("run 1: exit %d %v\n%s", code, err, errOut)
	}
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, notice) {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"subtype":"version_notice"`) || !strings.Contains(lines[0], "found 9.9.9") {
		t.Fatalf("first run: %d notices %q\n%s", len(lines), lines, out)
	}
	m := regexp.MustCompile(`chat ([0-9a-f-]{36}) \(continue`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("no chat id: %q", errOut)
	}
	code, out, errOut, err = run(t, "", "run", "--config", cfg, "--chat", m[1], "again")
	if code != 0 || err != nil {
		t.Fatalf("run 2: exit %d %v\n%s", code, err, errOut)
	}
	if strings.Contains(out+errOut, notice) {
		t.Fatalf("the notice was repeated in the same chat:\n%s\n%s", out, errOut)
	}
	// Another chat is told again.
	code, out, errOut, err = run(t, "", "run", "--config", cfg, "--agent", "claude", "--cwd", dir, "third")
	if code != 0 || err != nil || !strings.Contains(out+errOut, notice) {
		t.Fatalf("a new chat was not told: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
}
