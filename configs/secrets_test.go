package configs

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestConfigSecrets: the redaction set holds the database URL and its
// password, the front-ends' tokens and every agent env value long enough,
// but not a host path.
func TestConfigSecrets(t *testing.T) {
	dir := t.TempDir()
	c := &Config{
		Database: DatabaseConfig{URL: "postgres://tl:pa55-word@db:5432/tl"},
		Slack:    &SlackConfig{BotToken: "xoxb-bot-token", AppToken: "xapp-app-token", SigningSecret: "signing-secret"},
		Agents: map[string]AgentConfig{"claude": {Env: map[string]string{
			"ANTHROPIC_API_KEY":  "sk-ant-planted",
			"SOME_SETTING":       "long-enough-value",
			"CLAUDE_CONFIG_DIR":  filepath.Join(dir, "claude"),
			"ANTHROPIC_BASE_URL": "http://127.0.0.1:8080",
			"USE_BACKEND":        "bedrock",
			"DB_PASSWORD":        "hunter",
		}}},
	}
	got := c.Secrets()
	for _, want := range []string{"pa55-word", "postgres://tl:pa55-word@db:5432/tl", "xoxb-bot-token", "xapp-app-token",
		"signing-secret", "sk-ant-planted", "long-enough-value", "http://127.0.0.1:8080", "hunter"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets() lacks %q: %q", want, got)
		}
	}
	if slices.Contains(got, filepath.Join(dir, "claude")) || slices.Contains(got, "bedrock") {
		t.Errorf("a host path or a plain word is a secret: %q", got)
	}
	// A SQLite path is not a URL to hide.
	c = &Config{Database: DatabaseConfig{URL: filepath.Join(dir, "tl.db")}}
	if got := c.Secrets(); len(got) != 0 {
		t.Errorf("secrets() = %q", got)
	}
}

func TestSecretEnvValues(t *testing.T) {
	t.Setenv("TL_TEST_GH_TOKEN", "ghp-host-token")
	t.Setenv("TL_TEST_APIKEY", "apikey-value")
	t.Setenv("TL_TEST_PROXY", "http://user:proxy-pw@proxy:3128")
	t.Setenv("TL_TEST_PLAIN", "not-a-secret")
	got := SecretEnvValues("TL_TEST_GH_TOKEN", "TL_TEST_APIKEY", "TL_TEST_PROXY", "TL_TEST_PLAIN", "TL_TEST_UNSET")
	want := []string{"ghp-host-token", "apikey-value", "http://user:proxy-pw@proxy:3128", "proxy-pw"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretEnvValues = %q, want %q", got, want)
	}
	for name, secret := range map[string]bool{"API_KEY": true, "DB_PASSWORD": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true,
		"NPM_AUTH": true, "PWD": false, "HTTPS_PROXY": false, "LANG": false, "HOME": false} {
		if looksSecretName(name) != secret {
			t.Errorf("looksSecretName(%s) = %v", name, !secret)
		}
	}
}
