package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "threadline.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfig(t *testing.T) {
	t.Setenv("TL_TEST_DB", "postgres://u@127.0.0.1/db")
	t.Setenv("TL_TEST_KEY", "v$1")
	p := writeConfig(t, `
database:
  url: ${TL_TEST_DB}
defaults: {agent: claude}
agents:
  claude: {bin: /opt/claude, args: [--foo], env: {K: "${TL_TEST_KEY}"}, model: sonnet}
  fast: {base: claude, model: haiku}
`)
	cfg, err := loadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != "postgres://u@127.0.0.1/db" {
		t.Errorf("database.url = %q", cfg.Database.URL)
	}
	if got := cfg.Agents["claude"].Env["K"]; got != "v$1" {
		t.Errorf("env K = %q, want the value verbatim", got)
	}
	pid, a, err := cfg.agent("fast")
	if err != nil || pid != "claude" || a.Model != "haiku" {
		t.Errorf("agent(fast) = %q %+v %v", pid, a, err)
	}
	pid, a, err = cfg.agent("claude")
	if err != nil || pid != "claude" || a.Bin != "/opt/claude" || a.Args[0] != "--foo" {
		t.Errorf("agent(claude) = %q %+v %v", pid, a, err)
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unset env", "database:\n  url: ${TL_TEST_SURELY_UNSET}\n", "line 2: environment variable TL_TEST_SURELY_UNSET is not set"},
		{"bad yaml", "database: [\n", "yaml"},
		{"self base", "agents:\n  x: {base: x}\n", "base must name another agent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := loadConfig(writeConfig(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := loadConfig(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
			t.Fatal("no error for a missing --config file")
		}
	})
}

func TestAgentProfiles(t *testing.T) {
	cfg := &Config{Agents: map[string]AgentConfig{
		"claude":  {Base: "claude2"},
		"unknown": {Base: "nosuch"},
		"mine":    {Base: "claude"},
	}}
	if _, _, err := cfg.agent("claude"); err == nil || !strings.Contains(err.Error(), "cannot replace the built-in") {
		t.Errorf("profile replacing a built-in: %v", err)
	}
	if _, _, err := cfg.agent("unknown"); err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch"`) {
		t.Errorf("unknown base: %v", err)
	}
	if pid, _, err := cfg.agent("mine"); err != nil || pid != "claude" {
		t.Errorf("mine: %q %v", pid, err)
	}
}

func TestDefaultDatabaseIsSQLiteInXDGDataHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "threadline", "threadline.db"); cfg.Database.URL != want {
		t.Errorf("database.url = %q, want %q", cfg.Database.URL, want)
	}
}
