// configure_test.go: pi's configuration for the e2e tests, which run the
// real CLI against the scripted Chat Completions fake (a deployment
// configures pi itself; the provider never writes its config).

package pi

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// ConfigProvider is the provider name Configure writes.
const ConfigProvider = "threadline"

// Configure writes pi's configuration under home (used as $HOME) for an
// OpenAI-compatible endpoint (baseURL ends in /v1): ~/.pi/agent/models.json
// with provider "threadline" (api openai-completions, no developer role) and
// ~/.pi/agent/settings.json selecting it and model by default, without the
// install ping. It returns the environment to run pi with (HOME and XDG
// dirs under home).
func Configure(home, baseURL, apiKey, model string) (map[string]string, error) {
	dir := filepath.Join(home, ".pi", "agent")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	models := map[string]any{"providers": map[string]any{ConfigProvider: map[string]any{
		"baseUrl": baseURL, "api": "openai-completions", "apiKey": apiKey,
		"compat": map[string]any{"supportsDeveloperRole": false, "supportsReasoningEffort": false},
		"models": []any{map[string]any{"id": model, "name": model, "contextWindow": 128000, "maxTokens": 4096}},
	}}}
	settings := map[string]any{"defaultProvider": ConfigProvider, "defaultModel": model, "enableInstallTelemetry": false}
	for name, v := range map[string]any{"models.json": models, "settings.json": settings} {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, fmt.Errorf("pi %s: %w", name, err)
		}
	}
	return procrun.HomeEnv(home), nil
}
