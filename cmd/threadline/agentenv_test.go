// Tests of the environment each agent is started with: its own credential
// variables and pass_env from the host, proxies for all, bot secrets never.

package main

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
)

// childEnviron is what agent id's child process would get, as a provider
// composes it from the host environment and the agent's configured env.
func childEnviron(t *testing.T, set *agentset.Set, id string) []string {
	t.Helper()
	c, ok := set.Configs[id]
	if !ok {
		t.Fatalf("no agent %s", id)
	}
	return procrun.Environ(os.Environ(), c.Env, nil)
}

func TestAgentEnvComposition(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-exported-1234")
	t.Setenv("OPENAI_API_KEY", "sk-openai-exported-5678")
	t.Setenv("HTTPS_PROXY", "http://proxyuser:proxy-pass-9@proxy.example:3128")
	t.Setenv("no_proxy", "localhost,127.0.0.1")
	t.Setenv("NODE_EXTRA_CA_CERTS", "/etc/corp-ca.pem")
	t.Setenv("CORP_VAR", "corp-value")
	t.Setenv("SLACK_BOT_TOKEN", "xoxb-exported-bot-token")
	t.Setenv("MY_SLACK", "xoxb-expanded-bot-token")
	t.Setenv("DATABASE_URL", "postgres://u:dbpw@db/x")
	t.Setenv("UNRELATED_SECRET_TOKEN", "never-passes")
	cfg, err := configs.Load(writeConfig(t, `
slack: {bot_token: "${MY_SLACK}", app_token: xapp-1-abcdef}
agents:
  codex: {pass_env: [CORP_VAR, MY_SLACK]}
`))
	if err != nil {
		t.Fatal(err)
	}
	set, err := loadAgents(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	claude := childEnviron(t, set, "claude")
	codex := childEnviron(t, set, "codex")
	gemini := childEnviron(t, set, "gemini")

	has := func(env []string, kv string) bool { return slices.Contains(env, kv) }
	hasKey := func(env []string, k string) bool {
		return slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
	}
	// Each agent's own credentials, and only its own.
	if !has(claude, "ANTHROPIC_API_KEY=sk-ant-exported-1234") || hasKey(claude, "OPENAI_API_KEY") {
		t.Errorf("claude's env: %q", claude)
	}
	if !has(codex, "OPENAI_API_KEY=sk-openai-exported-5678") || hasKey(codex, "ANTHROPIC_API_KEY") {
		t.Errorf("codex's env: %q", codex)
	}
	if hasKey(gemini, "ANTHROPIC_API_KEY") || hasKey(gemini, "OPENAI_API_KEY") {
		t.Errorf("gemini got another CLI's key: %q", gemini)
	}
	// pass_env: to that agent only.
	if !has(codex, "CORP_VAR=corp-value") || hasKey(claude, "CORP_VAR") {
		t.Errorf("pass_env CORP_VAR: codex %q, claude %q", codex, claude)
	}
	// Proxies and CAs: to every agent.
	for _, env := range [][]string{claude, codex, gemini} {
		for _, kv := range []string{"HTTPS_PROXY=http://proxyuser:proxy-pass-9@proxy.example:3128", "no_proxy=localhost,127.0.0.1", "NODE_EXTRA_CA_CERTS=/etc/corp-ca.pem"} {
			if !has(env, kv) {
				t.Errorf("%s missing from %q", kv, env)
			}
		}
	}
	// Bot secrets never, even when listed (MY_SLACK holds the configured
	// bot token); nothing unrelated either.
	for _, env := range [][]string{claude, codex, gemini} {
		for _, k := range []string{"SLACK_BOT_TOKEN", "MY_SLACK", "DATABASE_URL", "UNRELATED_SECRET_TOKEN"} {
			if hasKey(env, k) {
				t.Errorf("%s reached an agent: %q", k, env)
			}
		}
	}
	// The passed values join the redaction set.
	red := cfg.Redactor()
	for _, v := range []string{"sk-ant-exported-1234", "sk-openai-exported-5678", "proxy-pass-9"} {
		if got := red.String("x " + v + " y"); strings.Contains(got, v) {
			t.Errorf("%q is not redacted: %q", v, got)
		}
	}
	if !slices.Contains(set.Secrets, "sk-ant-exported-1234") {
		t.Errorf("agentset.Set.Secrets (the relays' mask) lack the passed key: %d values", len(set.Secrets))
	}
}

func TestAgentEnvConfiguredWins(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-exported-1234")
	set, err := loadAgents(&configs.Config{Agents: map[string]configs.AgentConfig{
		"claude": {Env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant-configured-99"}},
	}}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	env := childEnviron(t, set, "claude")
	if !slices.Contains(env, "ANTHROPIC_API_KEY=sk-ant-configured-99") || slices.Contains(env, "ANTHROPIC_API_KEY=sk-ant-exported-1234") {
		t.Errorf("claude's env: %q", env)
	}
}

func TestPassEnvRefusesBotSecrets(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{"agents: {claude: {pass_env: [SLACK_BOT_TOKEN]}}\n", "agents.claude.pass_env: SLACK_BOT_TOKEN is one of the bot's own credentials"},
		{"agents: {claude: {pass_env: [DATABASE_URL]}}\n", "agents.claude.pass_env: DATABASE_URL"},
		{"agents: {claude: {pass_env: ['A=B']}}\n", `agents.claude.pass_env: "A=B" is not a variable name`},
	} {
		if _, err := configs.Load(writeConfig(t, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.body, err, tc.want)
		}
	}
}

// TestBuiltinsListTheirCredentials: the descriptors name their CLI's own
// credential variables, and none names a bot secret.
func TestBuiltinsListTheirCredentials(t *testing.T) {
	defs, err := builtinDefinitions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"claude":       {"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "ANTHROPIC_BASE_URL"},
		"codex":        {"OPENAI_API_KEY", "CODEX_API_KEY"},
		"gemini":       {"GEMINI_API_KEY", "GOOGLE_API_KEY"},
		"qwen":         {"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		"kimi":         {"KIMI_API_KEY", "MOONSHOT_API_KEY"},
		"cursor-agent": {"CURSOR_API_KEY"},
		"copilot":      {"COPILOT_GITHUB_TOKEN", "GH_TOKEN"},
		"opencode":     {"ANTHROPIC_API_KEY", "OPENAI_API_KEY"},
		"pi":           {"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"},
		"minimax":      {"MINIMAX_API_KEY"},
	}
	seen := map[string]bool{}
	for _, d := range defs {
		names := d.HostEnvNames()
		for _, n := range names {
			if procrun.IsBotSecret(n) {
				t.Errorf("%s passes the bot secret %s", d.ID, n)
			}
		}
		if w, ok := want[d.ID]; ok {
			seen[d.ID] = true
			for _, n := range w {
				if !slices.Contains(names, n) {
					t.Errorf("%s does not pass %s (passes %q)", d.ID, n, names)
				}
			}
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("no built-in %s", id)
		}
	}
}
