package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// TestInitCommand: threadline init writes a commented starter config (mode
// 0600) that loads, with the installed agent as defaults.agent, prints the
// next steps, and refuses to overwrite an existing file.
func TestInitCommand(t *testing.T) {
	claude := fakeapi.FindClaude(t) // before isolate changes the directory
	dir := isolate(t)
	bin := t.TempDir() // PATH holds the real Claude CLI and nothing else
	if err := os.Symlink(claude, filepath.Join(bin, "claude")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	code, out, errOut, err := run(t, "", "init")
	if code != 0 || err != nil {
		t.Fatalf("init: %d %v %s", code, err, errOut)
	}
	path := filepath.Join(dir, "config", "threadline", "config.yaml")
	if !strings.Contains(out, "Wrote "+path) || !strings.Contains(out, "threadline chat") {
		t.Errorf("out:\n%s", out)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode())
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatalf("the starter does not load: %v\n%s", err, b)
	}
	if cfg.Defaults.Agent != "claude" || cfg.Slack != nil || cfg.Matrix != nil {
		t.Errorf("defaults.agent %q, slack %v, matrix %v", cfg.Defaults.Agent, cfg.Slack, cfg.Matrix)
	}
	if !strings.Contains(string(b), "# database:") || !strings.Contains(string(b), "docs/config.md") {
		t.Errorf("the starter lacks its comments:\n%s", b)
	}

	os.WriteFile(path, []byte("# mine\n"), 0o600)
	code, _, _, err = run(t, "", "init")
	if code == 0 || err == nil || !strings.Contains(err.Error(), "never overwrites") {
		t.Errorf("second init: %d %v", code, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "# mine\n" {
		t.Errorf("init overwrote the config: %q", b)
	}
}

// TestInitSlack: --platform slack writes socket mode with the tokens in
// *_file files next to the config and says where to put them; the config
// loads once they are there. With no agent CLI installed it says how to
// install one and leaves defaults.agent commented.
func TestInitSlack(t *testing.T) {
	dir := isolate(t)
	t.Setenv("PATH", t.TempDir())
	path := filepath.Join(dir, "slack.yaml")
	code, out, _, err := run(t, "", "init", "--platform", "slack", "--config", path)
	if code != 0 || err != nil {
		t.Fatalf("init: %d %v", code, err)
	}
	secrets := filepath.Join(dir, "secrets")
	for _, want := range []string{"install an agent CLI", "configs/slack-manifest.yaml", filepath.Join(secrets, "slack_app_token"), "threadline serve --config " + path} {
		if !strings.Contains(out, want) {
			t.Errorf("out lacks %q:\n%s", want, out)
		}
	}
	if _, err := configs.Load(path); err == nil {
		t.Error("loads without its token files")
	}
	os.MkdirAll(secrets, 0o700)
	os.WriteFile(filepath.Join(secrets, "slack_app_token"), []byte("xapp-1-test\n"), 0o600)
	os.WriteFile(filepath.Join(secrets, "slack_bot_token"), []byte("xoxb-test\n"), 0o600)
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Slack == nil || cfg.Slack.Mode != "socket" || cfg.Slack.BotToken != "xoxb-test" || cfg.Defaults.Agent != "" {
		t.Errorf("slack %+v, agent %q", cfg.Slack, cfg.Defaults.Agent)
	}
	if code, _, _, _ := run(t, "", "init", "--platform", "irc"); code != 2 {
		t.Errorf("--platform irc: exit %d", code)
	}
}
