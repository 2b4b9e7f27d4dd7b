// Config: the config.toml that points Codex at one custom model provider.

package codexharness

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ProviderConfig is a CODEX_HOME config.toml whose model provider is a
// custom Responses API endpoint (codex-cli 0.169.0 rejects wire_api "chat"),
// with plugins, remote plugins, apps, analytics and update checks off so
// that nothing but the provider's base_url is contacted. minimax writes one
// for MiniMax, codex/fakeresponses one for its fake server.
type ProviderConfig struct {
	// Comment, when set, is a first "# ..." line.
	Comment string
	// Model is the default model.
	Model string
	// ID is the model provider id; Name its label.
	ID, Name string
	// BaseURL serves POST <BaseURL>/responses.
	BaseURL string
	// EnvKey is the variable the key is read from.
	EnvKey string
	// NoRetries sets request and stream retries to 0 (a scripted error
	// fails at once).
	NoRetries bool
}

// TOML is the config.toml text.
func (c ProviderConfig) TOML() string {
	var b strings.Builder
	if c.Comment != "" {
		fmt.Fprintf(&b, "# %s\n", c.Comment)
	}
	fmt.Fprintf(&b, "model = %s\nmodel_provider = %s\ncheck_for_update_on_startup = false\n\n", tomlString(c.Model), tomlString(c.ID))
	fmt.Fprintf(&b, "[model_providers.%s]\nname = %s\nbase_url = %s\nenv_key = %s\nwire_api = \"responses\"\n",
		c.ID, tomlString(c.Name), tomlString(c.BaseURL), tomlString(c.EnvKey))
	if c.NoRetries {
		b.WriteString("request_max_retries = 0\nstream_max_retries = 0\n")
	}
	b.WriteString(`
[features]
plugins = false
remote_plugin = false
apps = false

[analytics]
enabled = false
`)
	return b.String()
}

// Overrides is the same configuration as codex -c overrides (they go
// before the subcommand, see Options.Args), for a CODEX_HOME that does not
// hold it: a sandboxed run's, in its chat's own agent state. The default
// model is left out: a run names its model over the protocol (thread/start,
// turn/start).
func (c ProviderConfig) Overrides() []string {
	provider := fmt.Sprintf(`{name = %s, base_url = %s, env_key = %s, wire_api = "responses"`,
		tomlString(c.Name), tomlString(c.BaseURL), tomlString(c.EnvKey))
	if c.NoRetries {
		provider += ", request_max_retries = 0, stream_max_retries = 0"
	}
	var out []string
	for _, kv := range []string{
		"model_provider=" + tomlString(c.ID), "check_for_update_on_startup=false",
		"model_providers." + c.ID + "=" + provider + "}",
		"features.plugins=false", "features.remote_plugin=false", "features.apps=false", "analytics.enabled=false",
	} {
		out = append(out, "-c", kv)
	}
	return out
}

// tomlString quotes s as a TOML basic string (JSON escapes are valid TOML).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
