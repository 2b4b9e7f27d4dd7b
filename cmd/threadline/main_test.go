package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
)

// isolate points the XDG directories and the working directory at temp dirs so
// that no real config or database is touched.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	// Agents run as the agent user (and probes too, as a run): they pass
	// through the data directory to their state, as under /var/lib.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "data"), 0o711); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	// A short state directory: relay sockets live below it (108 bytes).
	state, err := os.MkdirTemp("", "tls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	t.Setenv("XDG_STATE_HOME", state)
	t.Chdir(dir)
	return dir
}

func run(t *testing.T, stdin string, args ...string) (int, string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	code, err := mainImpl(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String(), err
}

func TestVersion(t *testing.T) {
	code, out, _, err := run(t, "", "version")
	if code != 0 || err != nil || !strings.HasPrefix(out, "threadline ") {
		t.Fatalf("version: %d %q %v", code, out, err)
	}
}

func TestUsageErrors(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{{}, {"nosuch"}, {"run"}, {"run", "--events", "xml", "p"}, {"run", "--interactions", "maybe", "p"}} {
		code, _, _, _ := run(t, "", args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestMigrateDefaultSQLite(t *testing.T) {
	dir := isolate(t)
	code, out, _, err := run(t, "", "migrate")
	if code != 0 || err != nil || !strings.Contains(out, "sqlite database is up to date") {
		t.Fatalf("migrate: %d %q %v", code, out, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "threadline", "threadline.db")); err != nil {
		t.Errorf("no database in the XDG data dir: %v", err)
	}
}

func TestWrongDatabaseURL(t *testing.T) {
	dir := isolate(t)
	cfg := filepath.Join(dir, "bad.yaml")
	os.WriteFile(cfg, []byte("database:\n  url: postgres://nobody:hunter2@127.0.0.1:1/x?sslmode=disable\n"), 0o600)
	code, _, _, err := run(t, "", "run", "--config", cfg, "--agent", "claude", "hello")
	if code == 0 || err == nil {
		t.Fatal("a wrong database URL did not fail")
	}
	if !strings.Contains(err.Error(), "postgres") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("error should name the backend and hide the password: %v", err)
	}
}

func TestAgentNotInstalled(t *testing.T) {
	dir := isolate(t)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("agents:\n  claude: {bin: /nonexistent/claude}\n"), 0o600)
	for _, args := range [][]string{
		{"run", "--config", cfg, "--agent", "claude", "hello"},
		{"chat", "--config", cfg},
	} {
		code, _, _, err := run(t, "", args...)
		if code != 1 || err == nil {
			t.Fatalf("%v: exit %d err %v", args, code, err)
		}
		for _, want := range []string{"not found", "npm install -g @anthropic-ai/claude-code"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q lacks %q", args, err, want)
			}
		}
	}
}

func TestChatUnknownID(t *testing.T) {
	isolate(t)
	code, _, _, err := run(t, "", "chat", "--chat", "no-such-chat")
	if code != 1 || err == nil || !strings.Contains(err.Error(), `no chat starts with "no-such-chat"`) {
		t.Fatalf("exit %d err %v", code, err)
	}
}

func TestAuditEmpty(t *testing.T) {
	isolate(t)
	code, out, _, err := run(t, "", "audit")
	if code != 0 || err != nil || !strings.Contains(out, "No audited actions.") {
		t.Fatalf("audit: %d %q %v", code, out, err)
	}
}

func TestDoctor(t *testing.T) {
	dir := isolate(t)
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte("agents:\n  claude: {bin: /nonexistent/claude}\n"), 0o600)
	code, out, _, err := run(t, "", "doctor", "--config", cfg)
	if code != 1 || err == nil {
		t.Fatalf("doctor without any agent: exit %d err %v\n%s", code, err, out)
	}
	for _, want := range []string{"ok    config", "ok    database", "sqlite, schema up to date", "FAIL  agent claude", "npm install -g @anthropic-ai/claude-code", "FAIL  agents"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("database:\n  url: postgres://u:pa55word-xyz@127.0.0.1:1/x?sslmode=disable\n"), 0o600)
	code, out, _, _ = run(t, "", "doctor", "--config", bad)
	if code != 1 || !strings.Contains(out, "FAIL  database") || !strings.Contains(out, "fix: Check database.url") {
		t.Errorf("doctor with a dead database: exit %d\n%s", code, out)
	}
	if strings.Contains(out, "pa55word-xyz") {
		t.Errorf("doctor printed a secret:\n%s", out)
	}
}

func TestDoctorChecksSlackCredentials(t *testing.T) {
	dir := isolate(t)
	fake := slacktest.New(t)
	for token, want := range map[string]string{
		slacktest.BotToken:   "ok    slack ",
		"xoxb-revoked-token": "FAIL  slack ",
	} {
		cfg := filepath.Join(dir, "slack.yaml")
		os.WriteFile(cfg, []byte("slack: {app_token: "+slacktest.AppToken+", bot_token: "+token+", api_url: '"+fake.APIURL()+"'}\n"), 0o600)
		_, out, _, _ := run(t, "", "doctor", "--config", cfg)
		if !strings.Contains(out, want) {
			t.Errorf("token %s: doctor lacks %q:\n%s", token, want, out)
		}
		if strings.Contains(out, "xoxb-revoked-token") {
			t.Errorf("doctor printed the token:\n%s", out)
		}
	}
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "threadline.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
