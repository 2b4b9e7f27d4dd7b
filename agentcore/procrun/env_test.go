// Tests of the per-agent environment: proxies for all, credentials for their
// agent, bot secrets never.

package procrun

import (
	"slices"
	"testing"
)

// hostEnv is a bot's environment with an agent key of each kind, proxies and
// the bot's own secrets.
var hostEnv = []string{
	"PATH=/usr/bin", "HOME=/home/bot",
	"ANTHROPIC_API_KEY=sk-ant-host", "OPENAI_API_KEY=sk-openai-host", "GEMINI_API_KEY=gem-host",
	"HTTPS_PROXY=http://user:pw@proxy:3128", "https_proxy=http://proxy:3128", "NO_PROXY=localhost",
	"no_proxy=127.0.0.1", "ALL_PROXY=socks5://p", "HTTP_PROXY=http://p", "http_proxy=http://p", "all_proxy=socks5://p",
	"NODE_EXTRA_CA_CERTS=/etc/ca.pem", "SSL_CERT_FILE=/etc/ssl/ca.pem", "SSL_CERT_DIR=/etc/ssl/certs",
	"REQUESTS_CA_BUNDLE=/etc/ca.pem", "CURL_CA_BUNDLE=/etc/ca.pem",
	"SLACK_BOT_TOKEN=xoxb-bot", "SLACK_APP_TOKEN=xapp-bot", "MATRIX_ACCESS_TOKEN=syt", "THREADLINE_DB=x",
	"DATABASE_URL=postgres://u:p@db/x", "MY_SLACK=xoxb-expanded", "CORP_TOOL_TOKEN=corp", "EMPTY_KEY=",
	"GITHUB_TOKEN=gh-host",
}

func TestProxiesPassToEveryAgent(t *testing.T) {
	t.Parallel()
	got := Environ(hostEnv, nil, nil)
	for _, k := range ProxyKeys {
		if !slices.ContainsFunc(got, func(kv string) bool { return len(kv) > len(k) && kv[:len(k)+1] == k+"=" }) {
			t.Errorf("%s did not pass: %q", k, got)
		}
	}
	for _, kv := range got {
		for _, bad := range []string{"ANTHROPIC_API_KEY=", "OPENAI_API_KEY=", "SLACK_", "GITHUB_TOKEN=", "CORP_TOOL_TOKEN="} {
			if len(kv) >= len(bad) && kv[:len(bad)] == bad {
				t.Errorf("%s reached an agent that did not ask for it", kv)
			}
		}
	}
}

func TestHostPassOnlyTheNamedCredentials(t *testing.T) {
	t.Parallel()
	claude := []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"}
	got := HostPass(hostEnv, claude, nil)
	if want := map[string]string{"ANTHROPIC_API_KEY": "sk-ant-host"}; !mapsEqual(got, want) {
		t.Fatalf("claude's pass = %v, want %v", got, want)
	}
	codex := HostPass(hostEnv, []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, nil)
	if want := map[string]string{"OPENAI_API_KEY": "sk-openai-host"}; !mapsEqual(codex, want) {
		t.Fatalf("codex's pass = %v, want %v", codex, want)
	}
	env := Environ(hostEnv, got, nil)
	if !slices.Contains(env, "ANTHROPIC_API_KEY=sk-ant-host") || slices.Contains(env, "OPENAI_API_KEY=sk-openai-host") {
		t.Fatalf("claude's env = %q", env)
	}
}

func TestHostPassOperatorNamesButNeverBotSecrets(t *testing.T) {
	t.Parallel()
	expanded := func(k string) bool { return k == "MY_SLACK" }
	names := []string{"CORP_TOOL_TOKEN", "EMPTY_KEY", "UNSET_KEY", "SLACK_BOT_TOKEN", "slack_app_token", "MATRIX_ACCESS_TOKEN",
		"THREADLINE_DB", "DATABASE_URL", "MY_SLACK"}
	got := HostPass(hostEnv, names, expanded)
	if want := map[string]string{"CORP_TOOL_TOKEN": "corp"}; !mapsEqual(got, want) {
		t.Fatalf("pass_env %v = %v, want %v", names, got, want)
	}
	// Even an extra that names them (a caller that skipped HostPass) does
	// not pass them.
	env := Environ(hostEnv, map[string]string{"SLACK_BOT_TOKEN": "xoxb-bot", "MY_SLACK": "xoxb-expanded"}, expanded)
	for _, kv := range env {
		if kv == "SLACK_BOT_TOKEN=xoxb-bot" || kv == "MY_SLACK=xoxb-expanded" {
			t.Fatalf("a bot secret passed: %q", env)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
