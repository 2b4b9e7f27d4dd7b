package configs

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
	cfg, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database.URL != "postgres://u@127.0.0.1/db" {
		t.Errorf("database.url = %q", cfg.Database.URL)
	}
	if got := cfg.Agents["claude"].Env["K"]; got != "v$1" {
		t.Errorf("env K = %q, want the value verbatim", got)
	}
	if a := cfg.Agents["fast"]; a.Base != "claude" || a.Model != "haiku" {
		t.Errorf("agents.fast = %+v", a)
	}
	if a := cfg.Agents["claude"]; a.Bin != "/opt/claude" || a.Args[0] != "--foo" {
		t.Errorf("agents.claude = %+v", a)
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
			_, err := Load(writeConfig(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
			t.Fatal("no error for a missing --config file")
		}
	})
}

func TestDefaultDatabaseIsSQLiteInXDGDataHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", dir)
	t.Chdir(t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "threadline", "threadline.db"); cfg.Database.URL != want {
		t.Errorf("database.url = %q, want %q", cfg.Database.URL, want)
	}
}

func TestConfigValidation(t *testing.T) {
	tokenFile := filepath.Join(t.TempDir(), "bot-token")
	os.WriteFile(tokenFile, []byte("xoxb-from-file\n"), 0o600)
	for _, tc := range []struct {
		name, body, want string
	}{
		{"unknown key", "databse:\n  url: x\n", "line 1: unknown key databse (did you mean database?)"},
		{"slack mode", "slack: {mode: carrier-pigeon, bot_token: b}\n", `slack.mode: "carrier-pigeon" must be socket or http`},
		{"slack bot token", "slack: {app_token: a}\n", "slack.bot_token is required"},
		{"slack socket app token", "slack: {bot_token: b}\n", "slack.app_token is required in socket mode"},
		{"slack http signing", "slack: {mode: http, bot_token: b}\n", "slack.signing_secret is required in http mode"},
		{"both token and file", "slack: {bot_token: b, bot_token_file: " + tokenFile + ", app_token: a}\n", "slack.bot_token and slack.bot_token_file are both set"},
		{"missing file", "slack: {bot_token_file: /nonexistent/t, app_token: a}\n", "slack.bot_token_file"},
		{"matrix homeserver", "matrix: {homeserver: matrix.org, user_id: '@a:b', password: p}\n", "matrix.homeserver"},
		{"matrix user", "matrix: {homeserver: 'https://m.org', user_id: bot, password: p}\n", "matrix.user_id"},
		{"matrix creds", "matrix: {homeserver: 'https://m.org', user_id: '@a:b'}\n", "set access_token or password"},
		{"admins", "access: {admins: [U123]}\n", "must be slack:<user id> or matrix:@user:server"},
		{"listen", "http: {listen: localhost}\n", "http.listen"},
		{"duration", "defaults: {interaction_timeout: soon}\n", "is not a duration"},
		{"channel model flag", "slack: {bot_token: b, app_token: a, channels: {C1: {model: --auto}}}\n", `slack.channels.C1.model: invalid value for an agent option: "--auto" starts with '-'`},
		{"room model space", "matrix: {homeserver: 'https://m.org', user_id: '@a:b', password: p, rooms: {'!r:m.org': {model: 'gpt 5'}}}\n", "matrix.rooms.!r:m.org.model: invalid value"},
		{"workspace model", "slack: {bot_token: b, app_token: a, workspace: {model: '-m'}}\n", "slack.workspace.model: invalid value"},
		{"agent model", "agents: {opencode: {model: '--yolo'}}\n", "agents.opencode.model: invalid value"},
		{"thread context", "slack: {bot_token: b, app_token: a, channels: {C1: {thread_context: 'no'}}}\n", `slack.channels.C1.thread_context: "no" must be on or off`},
		{"room thread context", "matrix: {homeserver: 'https://m.org', user_id: '@a:b', password: p, rooms: {'!r:m.org': {thread_context: maybe}}}\n", "matrix.rooms.!r:m.org.thread_context"},
		{"context bytes", "context: {max_bytes: -1}\n", "context.max_bytes: -1 must not be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.body))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	t.Run("secret from file", func(t *testing.T) {
		cfg, err := Load(writeConfig(t, "slack: {bot_token_file: "+tokenFile+", app_token: xapp-1-abcdef}\ndefaults: {interaction_timeout: 5m}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Slack.BotToken != "xoxb-from-file" || cfg.Slack.Mode != "socket" || cfg.Defaults.InteractionTimeout.Minutes() != 5 {
			t.Errorf("%+v %+v", cfg.Slack, cfg.Defaults)
		}
		if s := strings.Join(cfg.Secrets(), " "); !strings.Contains(s, "xoxb-from-file") || !strings.Contains(s, "xapp-1-abcdef") {
			t.Errorf("secrets() = %q", s)
		}
	})
}

// TestContextBytes: context.max_bytes, 16384 unless set.
func TestContextBytes(t *testing.T) {
	cfg, err := Load(writeConfig(t, "defaults: {agent: claude}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ContextBytes() != 16384 {
		t.Errorf("default context.max_bytes %d", cfg.ContextBytes())
	}
	if cfg, err = Load(writeConfig(t, "context: {max_bytes: 4096}\n")); err != nil || cfg.ContextBytes() != 4096 {
		t.Errorf("context.max_bytes 4096: %v %v", cfg.ContextBytes(), err)
	}
}

func TestDefaultSkills(t *testing.T) {
	dir := t.TempDir()
	skill := filepath.Join(dir, "review")
	os.MkdirAll(skill, 0o755)
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("# Review\n"), 0o644)
	cfg, err := Load(writeConfig(t, "defaults:\n  skills: ["+skill+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s := cfg.Skills(); len(s) != 1 || s[0].Name != "review" || s[0].Path != filepath.Join(skill, "SKILL.md") {
		t.Errorf("skills = %+v", s)
	}
	if _, err := Load(writeConfig(t, "defaults:\n  skills: ["+dir+"]\n")); err == nil || !strings.Contains(err.Error(), "has no SKILL.md") {
		t.Errorf("a directory without SKILL.md: %v", err)
	}
}

func TestExampleConfigLoads(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	if _, err := Load("threadline.example.yaml"); err != nil {
		t.Fatalf("configs/threadline.example.yaml: %v", err)
	}
}

func TestChannelSkillsAreChecked(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(writeConfig(t, "slack: {bot_token: xoxb-1, app_token: xapp-1, channels: {C1: {skills: ["+dir+"]}}}\n"))
	if err == nil || !strings.Contains(err.Error(), "slack.channels.C1.skills") || !strings.Contains(err.Error(), "has no SKILL.md") {
		t.Fatalf("err = %v", err)
	}
}
