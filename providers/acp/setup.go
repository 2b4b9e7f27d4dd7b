// Setup: how each verified CLI is pointed at a model endpoint
// (Definition.Configure): the configuration file it reads under its home
// and the environment it runs with. The end-to-end tests use it to run the
// real CLIs against the scripted model servers.

package acp

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Endpoint is a model endpoint a CLI can be pointed at (see
// Definition.Configure).
type Endpoint struct {
	// OpenAIBaseURL is an OpenAI-compatible base URL ending in /v1.
	OpenAIBaseURL string
	// GeminiBaseURL is a Gemini-API base URL (for GOOGLE_GEMINI_BASE_URL).
	GeminiBaseURL string
	// ResponsesBaseURL is an OpenAI Responses API base URL ending in /v1
	// (Codex's wire_api "responses").
	ResponsesBaseURL string
	// AnthropicBaseURL is an Anthropic Messages API base URL (for
	// ANTHROPIC_BASE_URL).
	AnthropicBaseURL string
	APIKey           string
	Model            string
}

// setup is how a CLI is pointed at an Endpoint (Definition.Configure): the
// base URL it needs, the configuration file it reads under home, if any, and
// the environment it runs with beyond procrun.HomeEnv.
type setup struct {
	cli string
	// url is the endpoint's base URL the CLI talks to; needs says which it
	// is when missing.
	url   func(Endpoint) string
	needs string
	// file is the configuration's path under home; config writes it (JSON
	// unless toml).
	file   string
	config func(Endpoint) any
	toml   bool
	// env is the environment beyond procrun.HomeEnv.
	env func(home string, ep Endpoint) map[string]string
}

// The base URLs a setup may need.
var (
	openAIURL    = func(ep Endpoint) string { return ep.OpenAIBaseURL }
	needsOpenAI  = "OpenAI-compatible base URL"
	responsesURL = func(ep Endpoint) string { return ep.ResponsesBaseURL }
)

// configure is a Definition.Configure.
func (s setup) configure(home string, ep Endpoint) (map[string]string, error) {
	if s.url(ep) == "" {
		return nil, fmt.Errorf("%s: no %s", s.cli, s.needs)
	}
	env := procrun.HomeEnv(home)
	if s.file != "" {
		if err := writeConfig(filepath.Join(home, s.file), s.config(ep), s.toml); err != nil {
			return nil, fmt.Errorf("%s config: %w", s.cli, err)
		}
	}
	maps.Copy(env, s.env(home, ep))
	return env, nil
}

// writeConfig writes v (a string as it is when toml, else indented JSON) to
// path, creating its directory.
func writeConfig(path string, v any, toml bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	var b []byte
	if toml {
		b = []byte(v.(string))
	} else {
		var err error
		if b, err = json.MarshalIndent(v, "", "  "); err != nil {
			return err
		}
	}
	return os.WriteFile(path, b, 0o600)
}

// offlineOpencode are the switches opencode and its fork kilo (with their
// own prefix) take to fetch, download and load nothing beyond the endpoint.
func offlineOpencode(prefix string) map[string]string {
	env := map[string]string{}
	for _, k := range []string{"MODELS_FETCH", "LSP_DOWNLOAD", "DEFAULT_PLUGINS", "CLAUDE_CODE", "EXTERNAL_SKILLS"} {
		env[prefix+"_DISABLE_"+k] = "1"
	}
	return env
}

var opencodeSetup = setup{
	cli: "opencode", url: openAIURL, needs: needsOpenAI,
	file: ".config/opencode/opencode.json",
	config: func(ep Endpoint) any {
		return map[string]any{
			"$schema": "https://opencode.ai/config.json",
			"provider": map[string]any{"threadline": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Threadline endpoint",
				"options": map[string]any{"baseURL": ep.OpenAIBaseURL, "apiKey": ep.APIKey},
				"models":  map[string]any{ep.Model: map[string]any{"name": ep.Model}},
			}},
			"model":       "threadline/" + ep.Model,
			"small_model": "threadline/" + ep.Model,
			"autoupdate":  false,
			"share":       "disabled",
		}
	},
	env: func(string, Endpoint) map[string]string { return offlineOpencode("OPENCODE") },
}

// geminiSettings are the settings.json of qwen and gemini (a fork of it)
// for auth type auth: the model, and updates, usage statistics and
// telemetry off.
func geminiSettings(auth string, general map[string]any) func(Endpoint) any {
	return func(ep Endpoint) any {
		return map[string]any{
			"security":  map[string]any{"auth": map[string]any{"selectedType": auth}},
			"model":     map[string]any{"name": ep.Model},
			"general":   general,
			"privacy":   map[string]any{"usageStatisticsEnabled": false},
			"telemetry": map[string]any{"enabled": false},
		}
	}
}

var qwenSetup = setup{
	cli: "qwen", url: openAIURL, needs: needsOpenAI,
	file:   ".qwen/settings.json",
	config: geminiSettings("openai", map[string]any{"enableAutoUpdate": false}),
	env: func(_ string, ep Endpoint) map[string]string {
		return map[string]string{"OPENAI_BASE_URL": ep.OpenAIBaseURL, "OPENAI_API_KEY": ep.APIKey, "OPENAI_MODEL": ep.Model}
	},
}

var geminiSetup = setup{
	cli: "gemini", url: func(ep Endpoint) string { return ep.GeminiBaseURL },
	needs:  "Gemini-API base URL (gemini has no OpenAI-compatible mode)",
	file:   ".gemini/settings.json",
	config: geminiSettings("gemini-api-key", map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false}),
	env: func(_ string, ep Endpoint) map[string]string {
		return map[string]string{"GOOGLE_GEMINI_BASE_URL": ep.GeminiBaseURL, "GEMINI_API_KEY": ep.APIKey}
	},
}

var kiloSetup = setup{
	cli: "kilo", url: openAIURL, needs: needsOpenAI,
	file: ".config/kilo/kilo.json",
	config: func(ep Endpoint) any {
		return map[string]any{
			"provider": map[string]any{"threadline": map[string]any{
				"npm":     "@ai-sdk/openai-compatible",
				"name":    "Threadline endpoint",
				"options": map[string]any{"baseURL": ep.OpenAIBaseURL, "apiKey": ep.APIKey},
				"models": map[string]any{ep.Model: map[string]any{
					"name": ep.Model, "tool_call": true, "limit": map[string]any{"context": 128000, "output": 4096},
				}},
			}},
			"enabled_providers": []string{"threadline"},
			"model":             "threadline/" + ep.Model,
			"small_model":       "threadline/" + ep.Model,
			"autoupdate":        false,
			"share":             "disabled",
		}
	},
	env: func(string, Endpoint) map[string]string { return offlineOpencode("KILO") },
}

var copilotSetup = setup{
	cli: "copilot", url: openAIURL, needs: needsOpenAI,
	env: func(home string, ep Endpoint) map[string]string {
		return map[string]string{
			"COPILOT_HOME":              filepath.Join(home, ".copilot"),
			"COPILOT_OFFLINE":           "true",
			"COPILOT_PROVIDER_BASE_URL": ep.OpenAIBaseURL,
			"COPILOT_PROVIDER_TYPE":     "openai",
			"COPILOT_PROVIDER_API_KEY":  ep.APIKey,
			"COPILOT_MODEL":             ep.Model,
		}
	},
}

var droidSetup = setup{
	cli: "droid", url: openAIURL, needs: needsOpenAI,
	file: ".factory/config.json",
	config: func(ep Endpoint) any {
		return map[string]any{"custom_models": []map[string]any{{
			"model_display_name": ep.Model, "model": ep.Model, "base_url": ep.OpenAIBaseURL,
			"api_key": ep.APIKey, "provider": "generic-chat-completion-api", "max_tokens": 4096,
		}}}
	},
	env: func(string, Endpoint) map[string]string {
		return map[string]string{"FACTORY_AIRGAP_ENABLED": "1", "FACTORY_DISABLE_KEYRING": "1"}
	},
}

// codexACPConfig is the config.toml of a custom Responses provider for ep.
const codexACPConfig = `model = %q
model_provider = "threadline"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.threadline]
name = "Threadline endpoint"
base_url = %q
env_key = "CODEX_ACP_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false
`

var codexACPSetup = setup{
	cli: "codex-acp", url: responsesURL, needs: "Responses API base URL",
	file: ".codex/config.toml", toml: true,
	config: func(ep Endpoint) any { return fmt.Sprintf(codexACPConfig, ep.Model, ep.ResponsesBaseURL) },
	env: func(home string, ep Endpoint) map[string]string {
		return map[string]string{"CODEX_HOME": filepath.Join(home, ".codex"), "CODEX_ACP_API_KEY": ep.APIKey}
	},
}

var claudeAgentACPSetup = setup{
	cli: "claude-agent-acp", url: func(ep Endpoint) string { return ep.AnthropicBaseURL },
	needs: "Anthropic Messages API base URL",
	env: func(home string, ep Endpoint) map[string]string {
		return map[string]string{
			"CLAUDE_CONFIG_DIR":  filepath.Join(home, ".claude"),
			"ANTHROPIC_BASE_URL": ep.AnthropicBaseURL,
			"ANTHROPIC_API_KEY":  ep.APIKey,
		}
	},
}
