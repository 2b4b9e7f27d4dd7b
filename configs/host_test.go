package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

func TestHostConfigValidation(t *testing.T) {
	dir := isolate(t)
	for body, want := range map[string]string{
		"host:\n  isolation: maybe\n": "must be auto, sandbox, uid or off",
		"host:\n  user: a/b\n":        "not a user name",
	} {
		_, err := Load(writeYAMLIn(t, dir, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
	// uid asked for and impossible: every command stops.
	cfg, err := Load(writeYAMLIn(t, dir, "database:\n  url: "+filepath.Join(dir, "tl.db")+"\nhost:\n  user: surely-no-such-agent-user\n  isolation: uid\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := cfg.Host.Resolve(); err == nil || !strings.Contains(err.Error(), "host.isolation: uid") {
		t.Errorf("an impossible uid isolation: %v", err)
	}
}

func TestUnsetSecretEnv(t *testing.T) {
	dir := isolate(t)
	t.Setenv("TL_T_DB", "postgres://u:pw-from-env-123@127.0.0.1:1/x")
	t.Setenv("TL_T_TOKEN", "xoxb-from-env-456")
	t.Setenv("TL_T_PLAIN", "http://127.0.0.1:1")
	cfg, err := Load(writeYAMLIn(t, dir, "database:\n  url: ${TL_T_DB}\nslack:\n  bot_token: ${TL_T_TOKEN}\n  app_token: xapp-x\n  api_url: ${TL_T_PLAIN}\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.UnsetSecretEnv()
	for _, k := range []string{"TL_T_DB", "TL_T_TOKEN"} {
		if _, ok := os.LookupEnv(k); ok {
			t.Errorf("%s is still in the environment", k)
		}
	}
	if os.Getenv("TL_T_PLAIN") == "" {
		t.Error("a variable holding no secret was removed")
	}
	// A reload (SIGHUP) of the same file expands them to the start's values.
	again, err := Load(cfg.Path())
	if err != nil {
		t.Fatalf("reload after the secrets left the environment: %v", err)
	}
	if again.Database.URL != "postgres://u:pw-from-env-123@127.0.0.1:1/x" || again.Slack.BotToken != "xoxb-from-env-456" {
		t.Errorf("reloaded %q, %q", again.Database.URL, again.Slack.BotToken)
	}
}

// writeYAMLIn writes a config file into dir.
func writeYAMLIn(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// isolate points the data and config directories into a temporary
// directory, which becomes the working directory, and returns it.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Chdir(dir)
	return dir
}

// TestHostModes: on this kernel (Landlock ABI 4 or later) auto is the
// sandbox on top of the uid switch; uid is the switch alone; off is
// neither.
func TestHostModes(t *testing.T) {
	if ok, why := sandbox.Available(); !ok || os.Geteuid() != 0 {
		t.Skipf("needs root and Landlock: %s", why)
	}
	u := procruntest.NeedAgentUser(t)
	for mode, want := range map[string]string{"auto": "iso+sandbox", "sandbox": "iso+sandbox", "uid": "iso", "off": ""} {
		host, why, err := HostConfig{User: u.Username, Isolation: mode}.Resolve()
		got := ""
		if host.Iso != nil {
			got = "iso"
		}
		if host.Sandbox {
			got += "+sandbox"
		}
		if err != nil || why != nil || got != want {
			t.Errorf("%s: %q %v %v, want %q", mode, got, why, err, want)
		}
		if mode != "off" && !strings.Contains(host.Describe(), "as "+u.Username) {
			t.Errorf("%s: %s", mode, host.Describe())
		}
	}
	// Root without the agent user: sandbox refuses (the helper never runs
	// as root), auto is unisolated.
	if _, _, err := (HostConfig{User: "surely-no-such-agent-user", Isolation: "sandbox"}).Resolve(); err == nil {
		t.Error("sandbox as root without an agent user")
	}
	if host, why, err := (HostConfig{User: "surely-no-such-agent-user"}).Resolve(); err != nil || why == nil || host.Isolated() {
		t.Errorf("auto as root without an agent user: %+v %v %v", host, why, err)
	}
}
