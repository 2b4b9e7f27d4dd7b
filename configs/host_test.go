package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestHostConfigValidation(t *testing.T) {
	dir := isolate(t)
	for body, want := range map[string]string{
		"host:\n  isolation: sandbox\n": "sandbox is not available",
		"host:\n  isolation: maybe\n":   "must be auto, uid or off",
		"host:\n  user: a/b\n":          "not a user name",
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
