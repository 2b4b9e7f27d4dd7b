package configs_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/configs"
)

// TestStarter: a starter config is refused for an unknown platform and over
// an existing file; written, it is mode 0600, names the detected agent and
// loads (the platforms' starters need their secret files first).
func TestStarter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf", "config.yaml")
	if _, err := configs.NewStarter(path, "irc"); !errors.Is(err, configs.ErrUnknownPlatform) {
		t.Fatalf("NewStarter(irc) = %v, want ErrUnknownPlatform", err)
	}
	st, err := configs.NewStarter(path, "none")
	if err != nil {
		t.Fatal(err)
	}
	st.Agent = "codex"
	if err := st.Write(path, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("stat %s: %v %v", path, fi.Mode(), err)
	}
	cfg, err := configs.Load(path)
	if err != nil {
		t.Fatalf("the starter does not load: %v", err)
	}
	if cfg.Defaults.Agent != "codex" {
		t.Errorf("defaults.agent = %q, want codex", cfg.Defaults.Agent)
	}
	if _, err := configs.NewStarter(path, "none"); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("NewStarter over an existing file = %v", err)
	}
	if err := st.Write(path, time.Now()); err == nil {
		t.Error("Write over an existing file succeeded")
	}
	slack, err := configs.NewStarter(filepath.Join(filepath.Dir(path), "slack.yaml"), "slack")
	if err != nil {
		t.Fatal(err)
	}
	text, steps := slack.Text(time.Now()), strings.Join(slack.Steps("npm i", ""), "\n")
	for _, want := range []string{filepath.Join(slack.Secrets, "slack_app_token"), filepath.Join(slack.Secrets, "slack_bot_token")} {
		if !strings.Contains(text, want) || !strings.Contains(steps, want) {
			t.Errorf("the slack starter or its steps lack %s:\n%s\n%s", want, text, steps)
		}
	}
	if !strings.Contains(steps, "install an agent CLI (npm i)") {
		t.Errorf("no agent detected, but the steps do not say to install one:\n%s", steps)
	}
}
