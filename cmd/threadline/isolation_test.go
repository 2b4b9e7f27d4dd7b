package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeYAML writes a config file into dir.
func writeYAML(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestServeRefusesUnisolated(t *testing.T) {
	dir := isolate(t)
	db := "database:\n  url: " + filepath.Join(dir, "tl.db") + "\n"
	// A user that does not exist: auto finds no isolation.
	cfg := writeYAML(t, dir, db+"host:\n  user: surely-no-such-agent-user\n")
	code, _, errOut, err := run(t, "", "serve", "--config", cfg)
	if code == 0 || err == nil {
		t.Fatalf("serve started unisolated: %d %v", code, err)
	}
	if strings.Contains(errOut, "serving") {
		t.Errorf("serve served before refusing:\n%s", errOut)
	}
	for _, want := range []string{"not isolated", "surely-no-such-agent-user", "useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent", "host.isolation: off"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal lacks %q: %v", want, err)
		}
	}
	// Explicitly off, serve goes on (and stops later for want of a front-end).
	cfg = writeYAML(t, dir, db+"host:\n  user: surely-no-such-agent-user\n  isolation: off\n")
	code, _, errOut, err = run(t, "", "serve", "--config", cfg)
	if err == nil || !strings.Contains(err.Error(), "nothing to serve") {
		t.Fatalf("serve with host.isolation: off: %d %v\n%s", code, err, errOut)
	}
	if !strings.Contains(errOut, "host agents are not isolated (host.isolation: off)") {
		t.Errorf("serve did not log that agents are unisolated:\n%s", errOut)
	}
}

func TestChatAndRunWarnOnceUnisolated(t *testing.T) {
	dir := isolate(t)
	cfg := writeYAML(t, dir, "database:\n  url: "+filepath.Join(dir, "tl.db")+"\nhost:\n  user: surely-no-such-agent-user\n")
	for _, args := range [][]string{
		{"run", "--config", cfg, "--agent", "nosuch-agent", "hi"},
		{"chat", "--config", cfg, "--agent", "nosuch-agent"},
	} {
		_, _, errOut, _ := run(t, "", args...)
		if n := strings.Count(errOut, "unisolated"); n != 1 {
			t.Errorf("%s: %d isolation warnings, want 1:\n%s", args[0], n, errOut)
		}
	}
	// Explicitly off: no warning.
	cfg = writeYAML(t, dir, "database:\n  url: "+filepath.Join(dir, "tl.db")+"\nhost:\n  isolation: off\n")
	if _, _, errOut, _ := run(t, "", "run", "--config", cfg, "--agent", "nosuch-agent", "hi"); strings.Contains(errOut, "unisolated") {
		t.Errorf("warned with host.isolation: off:\n%s", errOut)
	}
}

// TestRootChatSaysAgentCannotWrite: started as root, chat and run run the
// agent as the agent user and say, before the first prompt, what it may
// touch and that it cannot write the chosen directory (root's, 0700).
func TestRootChatSaysAgentCannotWrite(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root's view")
	}
	agentUser(t)
	dir := isolate(t)
	private := filepath.Join(dir, "private")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := writeYAML(t, dir, "database:\n  url: "+filepath.Join(dir, "tl.db")+"\nagents:\n  claude:\n    bin: /bin/false\n")
	_, _, errOut, _ := run(t, "", "run", "--config", cfg, "--agent", "claude", "--cwd", private, "hi")
	for _, want := range []string{"host agents run as threadline-agent in a sandbox", "cannot change files in " + private, "cannot pass through " + private} {
		if !strings.Contains(errOut, want) {
			t.Errorf("run as root in a private directory: no %q:\n%s", want, errOut)
		}
	}
}
