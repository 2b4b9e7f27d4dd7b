// End-to-end: an ANTHROPIC_API_KEY exported in the bot's environment reaches
// the real Claude Code CLI with no env in the config; the bot's own secrets
// and other CLIs' keys do not.

package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// TestExportedKeyReachesClaude runs `threadline run` with the real Claude CLI
// against the scripted fake API. The config names claude's bin and a
// pass_env, and no env: the key, the base URL and the config directory come
// from the bot's environment, as after `export ANTHROPIC_API_KEY=…`.
func TestExportedKeyReachesClaude(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := fakeapi.New(t,
		fakeapi.When("ENV", fakeapi.ToolUse("Bash", map[string]any{
			"command": "env | sort", "description": "Show the environment",
		})),
		fakeapi.Text("Signed", " in."),
	)
	// The fake's handler behind a listener that notes the key each request
	// carried (the fake drops auth headers from its records).
	var (
		mu   sync.Mutex
		keys []string
	)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/messages" {
			mu.Lock()
			keys = append(keys, r.Header.Get("X-Api-Key"))
			mu.Unlock()
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	const key = "sk-ant-exported-e2e-7f3a9c"
	const botToken = "xoxb-exported-bot-4d2e1b"
	// What an operator has exported before `threadline run`: the fake's
	// environment (home, config dir, no telemetry), minus its dummy key.
	env := srv.ClaudeEnv(filepath.Join(dir, "claude-home"))
	delete(env, "ANTHROPIC_API_KEY")
	env["ANTHROPIC_BASE_URL"] = front.URL
	quiet := []string{}
	for k, v := range env {
		t.Setenv(k, v)
		if strings.HasPrefix(k, "DISABLE_") || strings.HasPrefix(k, "CLAUDE_CODE_") {
			quiet = append(quiet, k)
		}
	}
	slices.Sort(quiet)
	t.Setenv("ANTHROPIC_API_KEY", key)
	t.Setenv("SLACK_BOT_TOKEN", botToken)
	t.Setenv("OPENAI_API_KEY", "sk-openai-not-for-claude")
	t.Setenv("UNRELATED_TOKEN", "unrelated-not-for-claude")

	cfgPath := filepath.Join(dir, "threadline.yaml")
	raw, _ := yaml.Marshal(map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		// No env: only the executable, and the switches that keep the CLI
		// quiet passed by name.
		"agents": map[string]any{"claude": map[string]any{"bin": bin, "pass_env": quiet}},
	})
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	code, out, errOut, err := run(t, "", "run", "--config", cfgPath, "--cwd", work, "--interactions", "accept", "--events", "jsonl", "ENV please")
	if code != 0 || err != nil {
		t.Fatalf("run: exit %d err %v\nstderr: %s\nstdout: %s", code, err, errOut, out)
	}
	mu.Lock()
	seen := append([]string(nil), keys...)
	mu.Unlock()
	if len(seen) == 0 {
		t.Fatalf("the fake API got no message request; stderr:\n%s", errOut)
	}
	for i, k := range seen {
		if k != key {
			t.Errorf("request %d: x-api-key %q, want the exported key", i, k)
		}
	}
	// The Bash tool's `env | sort`, as the agent saw it (tool output is
	// redacted, so the key shows as a redacted value).
	reqs := srv.MessageRequests()
	var toolOut string
	for _, r := range reqs {
		for _, b := range r.ToolResults() {
			toolOut += b.ResultText()
		}
	}
	if !strings.Contains(toolOut, "PATH=") || !strings.Contains(toolOut, "ANTHROPIC_BASE_URL="+front.URL) {
		t.Fatalf("no env output came back to the model:\n%s", toolOut)
	}
	if !strings.Contains(toolOut, "ANTHROPIC_API_KEY="+key) {
		t.Errorf("the agent's environment lacks the exported ANTHROPIC_API_KEY:\n%s", toolOut)
	}
	for _, bad := range []string{"SLACK_BOT_TOKEN", botToken, "OPENAI_API_KEY", "UNRELATED_TOKEN"} {
		if strings.Contains(toolOut, bad) {
			t.Errorf("%s reached the agent's environment:\n%s", bad, toolOut)
		}
	}
	// The key is a secret to the bot: what it prints and stores is redacted.
	if strings.Contains(out, key) || strings.Contains(errOut, key) {
		t.Errorf("the exported key was not redacted from the run's output")
	}
	if !strings.Contains(out, "ANTHROPIC_API_KEY=") {
		t.Errorf("the run's events lack the tool's env output:\n%s", out)
	}
}
