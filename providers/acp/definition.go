// Definitions: the ACP agent CLIs Threadline knows, their launch syntax,
// environment and quirks.

package acp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// Definition describes one ACP agent CLI. A Provider is built from one
// Definition (see New); local profiles copy a Definition and change Bin, Args
// or Env. The built-ins are made from their registry descriptor (see
// Descriptors): ID, Name, Bin, Args, InstallHint, VerifiedWith and Resume are
// the descriptor's, so what detection reports is what a run launches.
type Definition struct {
	// Descriptor is the registry's description of the CLI this definition
	// was made from.
	Descriptor registry.Definition
	// ID is the provider id ("opencode", "qwen", ...).
	ID agent.ProviderID
	// Name is the human name ("OpenCode").
	Name string
	// Bin is the executable looked up in PATH.
	Bin string
	// Args select ACP mode (e.g. ["acp"] or ["--acp"]).
	Args []string
	// Env is added to every child's environment below the operator's env:
	// telemetry, update checks and other non-essential traffic off.
	Env map[string]string
	// InstallHint tells an operator how to install the CLI.
	InstallHint string
	// Wiring tells an operator how to point the CLI at a model endpoint and
	// keep its telemetry off (see also Configure).
	Wiring string
	// VerifiedWith lists the CLI versions this adapter was checked against
	// (transcripts and end-to-end tests); empty when it was not installed.
	VerifiedWith []string
	// Resume allows session/load of RunRequest.ResumeID when the agent
	// advertises loadSession. Without it no session id is reported and a
	// ResumeID returns agent.ErrSessionNotFound at once.
	Resume bool
	// LoadQuiet, when positive, keeps treating history updates as the
	// session/load replay after the load answer until none arrived for this
	// long, and only then sends the prompt (gemini replays after answering).
	LoadQuiet time.Duration
	// PolicyArgs and PolicyEnv return extra arguments and environment for an
	// approval policy (so that the agent asks through ACP instead of running
	// tools unasked, or runs them unasked under accept). Nil adds nothing.
	PolicyArgs func(p agent.ApprovalPolicy) []string
	PolicyEnv  func(p agent.ApprovalPolicy) map[string]string
	// SessionNotFound reports whether a session/load error means the session
	// does not exist; nil means code -32002 (resource not found) only.
	SessionNotFound func(e *jsonrpc.Error) bool
	// Configure writes the CLI's configuration under home (used as $HOME) so
	// that it talks to ep, and returns the environment to run it with
	// (including HOME). Nil when the wiring was never verified here.
	Configure func(home string, ep Endpoint) (map[string]string, error)
}

// Endpoint is a model endpoint a CLI can be pointed at (see
// Definition.Configure).
type Endpoint struct {
	// OpenAIBaseURL is an OpenAI-compatible base URL ending in /v1.
	OpenAIBaseURL string
	// GeminiBaseURL is a Gemini-API base URL (for GOOGLE_GEMINI_BASE_URL).
	GeminiBaseURL string
	APIKey        string
	Model         string
}

// define fills d's launch facts from its descriptor.
func define(desc registry.Definition, d Definition) Definition {
	d.Descriptor = desc
	d.ID, d.Name, d.Bin = agent.ProviderID(desc.ID), desc.Name, desc.Executable
	d.Args = append([]string(nil), desc.Args.Base...)
	d.InstallHint = desc.InstallHint
	d.VerifiedWith = append([]string(nil), desc.VerifiedVersions...)
	d.Resume = desc.Resume == registry.ResumeProtocol
	return d
}

// OpencodePermissionEnv is the OPENCODE_CONFIG_CONTENT that makes opencode
// ask before bash, edits and web fetches (by default it runs them unasked).
const OpencodePermissionEnv = `{"permission":{"bash":"ask","edit":"ask","webfetch":"ask"}}`

// Opencode is `opencode acp` (opencode-ai, verified with 1.18.33).
func Opencode() Definition {
	return define(opencodeDescriptor(), Definition{
		Env: map[string]string{
			"OPENCODE_DISABLE_AUTOUPDATE": "1",
			"OPENCODE_DISABLE_SHARE":      "1",
		},
		Wiring: "a provider in $XDG_CONFIG_HOME/opencode/opencode.json (npm @ai-sdk/openai-compatible, options.baseURL, " +
			"apiKey, models) and \"model\": \"<provider>/<model>\"; add OPENCODE_DISABLE_MODELS_FETCH=1, " +
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1 and OPENCODE_DISABLE_DEFAULT_PLUGINS=1 offline",
		PolicyEnv: func(p agent.ApprovalPolicy) map[string]string {
			if p == agent.ApprovalAccept {
				return nil
			}
			return map[string]string{"OPENCODE_CONFIG_CONTENT": OpencodePermissionEnv}
		},
		// opencode answers a load of an unknown id with its generic session
		// service failure: {"code":-32603,"message":"Internal error: OpenCode
		// service failure","data":{"service":"session"}}.
		SessionNotFound: func(e *jsonrpc.Error) bool {
			if e.Code == CodeResourceNotFound {
				return true
			}
			var d struct {
				Service string `json:"service"`
			}
			_ = json.Unmarshal(e.Data, &d)
			return e.Code == CodeInternalError && d.Service == "session" && strings.Contains(e.Message, "OpenCode service failure")
		},
		Configure: configureOpencode,
	})
}

// Qwen is `qwen --acp` (@qwen-code/qwen-code, verified with 0.24.4).
func Qwen() Definition {
	return define(qwenDescriptor(), Definition{
		Env: map[string]string{
			"QWEN_USAGE_STATISTICS_ENABLED": "false",
			"QWEN_TELEMETRY_ENABLED":        "false",
		},
		Wiring: "OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL plus ~/.qwen/settings.json with " +
			"security.auth.selectedType \"openai\", general.enableAutoUpdate false, privacy.usageStatisticsEnabled false, telemetry.enabled false",
		// qwen's default approval mode "auto" asks an LLM classifier; "default"
		// asks the client, "yolo" runs tools unasked.
		PolicyArgs: func(p agent.ApprovalPolicy) []string {
			if p == agent.ApprovalAccept {
				return []string{"--approval-mode", "yolo"}
			}
			return []string{"--approval-mode", "default"}
		},
		// qwen: {"code":-32002,"message":"Resource not found: session:<id>"}, also
		// for a real id from another cwd.
		Configure: configureQwen,
	})
}

// Gemini is `gemini --acp` (@google/gemini-cli, verified with 0.61.0).
//
// Resume is off: gemini 0.61.0's session/load fails within the minute of the
// session's last start and deletes the session's history on the second load
// (see the package doc), so Threadline keeps gemini chats on the visible
// transcript instead of native sessions.
func Gemini() Definition {
	return define(geminiDescriptor(), Definition{
		Env: map[string]string{
			"GEMINI_TELEMETRY_ENABLED": "false",
		},
		Wiring: "no OpenAI-compatible mode: GOOGLE_GEMINI_BASE_URL (plain http only for localhost) and GEMINI_API_KEY, " +
			"plus ~/.gemini/settings.json with security.auth.selectedType \"gemini-api-key\", model.name, " +
			"general.enableAutoUpdate false, privacy.usageStatisticsEnabled false, telemetry.enabled false; " +
			"GEMINI_CLI_TRUST_WORKSPACE=true is needed for \"allow always\" and yolo in an untrusted folder",
		LoadQuiet: 300 * time.Millisecond,
		PolicyArgs: func(p agent.ApprovalPolicy) []string {
			if p == agent.ApprovalAccept {
				return []string{"--approval-mode", "yolo"}
			}
			return []string{"--approval-mode", "default"}
		},
		// gemini answers -32603 "Internal error" with the reason in
		// data.details: "No previous sessions found for this project." or
		// "Invalid session identifier \"<id>\". …".
		SessionNotFound: func(e *jsonrpc.Error) bool {
			d := e.Details()
			return e.Code == CodeResourceNotFound || strings.HasPrefix(d, "No previous sessions found") || strings.HasPrefix(d, "Invalid session identifier")
		},
		Configure: configureGemini,
	})
}

// Kiro is `kiro-cli acp` (Kiro CLI; not verified here).
func Kiro() Definition {
	return define(kiroDescriptor(), Definition{Wiring: "Kiro account login; not verified here"})
}

// Kilo is `kilo acp` (@kilocode/cli, an opencode fork; not verified here).
func Kilo() Definition {
	return define(kiloDescriptor(), Definition{Wiring: "kilo's provider config (opencode-style); not verified here"})
}

// Devin is `devin acp` (Devin for Terminal; not verified here).
func Devin() Definition {
	return define(devinDescriptor(), Definition{Wiring: "Devin account login; not verified here"})
}

// Hermes is `hermes acp` (Nous Research Hermes Agent; not verified here).
func Hermes() Definition {
	return define(hermesDescriptor(), Definition{Wiring: "hermes auth add <provider> or keys in ~/.hermes/.env; not verified here"})
}

// Vibe is `vibe-acp` (Mistral Vibe; not verified here).
func Vibe() Definition {
	return define(vibeDescriptor(), Definition{Wiring: "MISTRAL_API_KEY or ~/.vibe/config.toml; not verified here"})
}

// Reasonix is `reasonix acp` (DeepSeek Reasonix; not verified here).
func Reasonix() Definition {
	return define(reasonixDescriptor(), Definition{Wiring: "DEEPSEEK_API_KEY; not verified here"})
}

// Vela is `vela agent run --runtime opencode` (AMR; not verified here).
func Vela() Definition {
	return define(velaDescriptor(), Definition{Wiring: "VELA_RUNTIME_KEY and VELA_LINK_URL (an OpenAI-compatible endpoint); not verified here"})
}

// Trae is `traecli acp serve` (Trae CLI; not verified here).
func Trae() Definition {
	return define(traeDescriptor(), Definition{Wiring: "Trae account login; not verified here"})
}

// homeEnv is the environment that confines a CLI's state to home.
func homeEnv(home string) map[string]string {
	return map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"NO_PROXY":        "127.0.0.1,localhost",
		"no_proxy":        "127.0.0.1,localhost",
	}
}

func writeJSONFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func configureOpencode(home string, ep Endpoint) (map[string]string, error) {
	if ep.OpenAIBaseURL == "" {
		return nil, fmt.Errorf("opencode: no OpenAI-compatible base URL")
	}
	env := homeEnv(home)
	cfg := map[string]any{
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
	if err := writeJSONFile(filepath.Join(env["XDG_CONFIG_HOME"], "opencode", "opencode.json"), cfg); err != nil {
		return nil, fmt.Errorf("opencode config: %w", err)
	}
	env["OPENCODE_DISABLE_MODELS_FETCH"] = "1"
	env["OPENCODE_DISABLE_LSP_DOWNLOAD"] = "1"
	env["OPENCODE_DISABLE_DEFAULT_PLUGINS"] = "1"
	env["OPENCODE_DISABLE_CLAUDE_CODE"] = "1"
	env["OPENCODE_DISABLE_EXTERNAL_SKILLS"] = "1"
	return env, nil
}

func configureQwen(home string, ep Endpoint) (map[string]string, error) {
	if ep.OpenAIBaseURL == "" {
		return nil, fmt.Errorf("qwen: no OpenAI-compatible base URL")
	}
	env := homeEnv(home)
	cfg := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "openai"}},
		"model":     map[string]any{"name": ep.Model},
		"general":   map[string]any{"enableAutoUpdate": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
	if err := writeJSONFile(filepath.Join(home, ".qwen", "settings.json"), cfg); err != nil {
		return nil, fmt.Errorf("qwen settings: %w", err)
	}
	env["OPENAI_BASE_URL"] = ep.OpenAIBaseURL
	env["OPENAI_API_KEY"] = ep.APIKey
	env["OPENAI_MODEL"] = ep.Model
	return env, nil
}

func configureGemini(home string, ep Endpoint) (map[string]string, error) {
	if ep.GeminiBaseURL == "" {
		return nil, fmt.Errorf("gemini: no Gemini-API base URL (gemini has no OpenAI-compatible mode)")
	}
	env := homeEnv(home)
	cfg := map[string]any{
		"security":  map[string]any{"auth": map[string]any{"selectedType": "gemini-api-key"}},
		"model":     map[string]any{"name": ep.Model},
		"general":   map[string]any{"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
		"privacy":   map[string]any{"usageStatisticsEnabled": false},
		"telemetry": map[string]any{"enabled": false},
	}
	if err := writeJSONFile(filepath.Join(home, ".gemini", "settings.json"), cfg); err != nil {
		return nil, fmt.Errorf("gemini settings: %w", err)
	}
	env["GOOGLE_GEMINI_BASE_URL"] = ep.GeminiBaseURL
	env["GEMINI_API_KEY"] = ep.APIKey
	return env, nil
}
