// The sign-in check of chat and run: said before the first prompt, with the
// fix; the real Claude CLI's "Not logged in" comes back as the same hint.

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// noClaudeLogin clears every way Claude could sign in from the test's
// environment, with HOME and CLAUDE_CONFIG_DIR in dir.
func noClaudeLogin(t *testing.T, dir string) {
	t.Helper()
	for _, k := range []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"} {
		t.Setenv(k, "")
	}
	home := filepath.Join(dir, "home")
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", filepath.Join(home, ".claude"))
}

// TestRunSaysClaudeCannotSignIn: `threadline run` with the real Claude CLI and
// no key nor login says so before the prompt runs, and the run fails with
// the hint rather than Claude's bare "Not logged in".
func TestRunSaysClaudeCannotSignIn(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	noClaudeLogin(t, dir)
	srv := fakeapi.New(t, fakeapi.Text("must not be asked"))
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	cfgPath := filepath.Join(dir, "threadline.yaml")
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin}},
	})
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, _ := run(t, "", "run", "--config", cfgPath, "--cwd", dir, "hello")
	if code == 0 {
		t.Fatalf("run succeeded without a login:\n%s", out)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", out, errOut)
	warn := strings.Index(errOut, "threadline: claude cannot sign in")
	chat := strings.Index(errOut, "threadline: chat ")
	if warn < 0 || !strings.Contains(errOut, "fix: export ANTHROPIC_API_KEY=…") {
		t.Fatalf("no sign-in warning on stderr:\n%s", errOut)
	}
	if chat >= 0 && warn > chat {
		t.Errorf("the warning came after the run started:\n%s", errOut)
	}
	if !strings.Contains(out+errOut, claude.NotSignedInHint) {
		t.Errorf("the failed run does not carry the hint:\nstdout: %s\nstderr: %s", out, errOut)
	}
	if n := len(srv.MessageRequests()); n != 0 {
		t.Errorf("the API was called %d times", n)
	}
}

// TestChatSaysClaudeCannotSignIn: `threadline chat` warns before its first
// prompt; with a key exported it does not.
func TestChatSaysClaudeCannotSignIn(t *testing.T) {
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	noClaudeLogin(t, dir)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin}},
	})
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut, err := run(t, "", "chat", "--config", cfgPath, "--cwd", dir)
	if code != 0 || err != nil {
		t.Fatalf("chat: exit %d %v\n%s", code, err, errOut)
	}
	if !strings.Contains(errOut, "threadline: claude cannot sign in") || !strings.Contains(errOut, "run `claude /login` as") {
		t.Errorf("chat did not warn:\nstdout: %s\nstderr: %s", out, errOut)
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-exported")
	if _, _, errOut, _ := run(t, "", "chat", "--config", cfgPath, "--cwd", dir); strings.Contains(errOut, "cannot sign in") {
		t.Errorf("warned with a key exported:\n%s", errOut)
	}
}
