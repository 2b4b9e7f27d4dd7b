package main

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// realClaudeDir readies a test that runs the REAL Claude Code CLI inside a
// loopback-only network namespace: ok is false outside it (the test ran in
// a child there). bin is the CLI, dir the test's directory, which holds the
// XDG data and config homes.
func realClaudeDir(t *testing.T) (bin, dir string, ok bool) {
	t.Helper()
	if !providertest.InNetns(t) {
		return "", "", false
	}
	bin = fakeapi.FindClaude(t)
	dir = t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	return bin, dir, true
}

// slackServeConfig writes dir/threadline.yaml, the config of a `threadline
// serve` with the fake Slack in front (channel C1, open to UDEV, approved by
// approver) and the Claude CLI bin behind it, talking to api; it returns the
// file's path. The database and workdir (dir/work) are in dir; isolation is
// off (it is TestRunIsolatedEndToEnd's subject).
func slackServeConfig(t *testing.T, dir, bin string, api *fakeapi.Server, fake *slacktest.Server, approver string) string {
	t.Helper()
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"},
		"http":     map[string]any{"listen": freePort(t)},
		"workdir":  filepath.Join(dir, "work"),
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
		"slack": map[string]any{
			"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}, "approvers": []string{approver}}},
		},
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(cfgPath, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath
}
