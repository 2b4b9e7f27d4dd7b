// Definitions: the ACP agent CLIs Threadline knows, their launch syntax,
// environment and quirks.

package acp

import (
	"encoding/json"
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
	// RootEnv is added above Env when Threadline runs as root (claude-agent-acp
	// refuses its permission modes as root unless IS_SANDBOX=1).
	RootEnv map[string]string
	// Native, when set, launches the platform binary behind the CLI's npm
	// wrapper, which does not forward signals (see NpmNative).
	Native *NpmNative
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
	// ExitTimeout, when positive, is how long the agent may live after its
	// turn ended (completed, failed or cancelled) and stdin closed before its
	// process group is killed, for agents that do not exit at stdin's end
	// (codex-acp, claude-agent-acp); zero is Options.StopGrace.
	ExitTimeout time.Duration
	// LoadQuiet, when positive, keeps treating history updates as the
	// session/load replay after the load answer until none arrived for this
	// long, and only then sends the prompt (gemini replays after answering).
	LoadQuiet time.Duration
	// PolicyArgs and PolicyEnv return extra arguments and environment for an
	// approval policy (so that the agent asks through ACP instead of running
	// tools unasked, or runs them unasked under accept). Nil adds nothing.
	PolicyArgs func(p agent.ApprovalPolicy) []string
	PolicyEnv  func(p agent.ApprovalPolicy) map[string]string
	// TempEnv names the variable the CLI takes its temporary directory from
	// instead of TMPDIR (claude-agent-acp: CLAUDE_CODE_TMPDIR, else /tmp):
	// set to the run's TMPDIR when the run's environment has one (a
	// sandboxed run may not write /tmp); empty: none.
	TempEnv string
	// PortFlag is the flag that sets the port of the CLI's own local server
	// (kilo: --port), bound to RunRequest.LocalPort when the run has one (a
	// sandboxed run may reach no other local port); empty: none.
	PortFlag string
	// SessionNotFound reports whether a session/load error means the session
	// does not exist; nil means code -32002 (resource not found) only.
	SessionNotFound func(e *jsonrpc.Error) bool
	// Configure writes the CLI's configuration under home (used as $HOME) so
	// that it talks to ep, and returns the environment to run it with
	// (including HOME). Nil when the wiring was never verified here.
	Configure func(home string, ep Endpoint) (map[string]string, error)
}

// byPolicy is a Definition.PolicyArgs or PolicyEnv: accept for a run that
// accepts every tool, ask for the others. Callers read the values and must
// not modify them.
func byPolicy[T any](accept, ask T) func(agent.ApprovalPolicy) T {
	return func(p agent.ApprovalPolicy) T {
		if p == agent.ApprovalAccept {
			return accept
		}
		return ask
	}
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
		PolicyEnv: byPolicy[map[string]string](nil, map[string]string{"OPENCODE_CONFIG_CONTENT": OpencodePermissionEnv}),
		// opencode acp serves itself on a local port and connects to it.
		PortFlag: "--port",
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
		Configure: opencodeSetup.configure,
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
		PolicyArgs: byPolicy([]string{"--approval-mode", "yolo"}, []string{"--approval-mode", "default"}),
		// qwen: {"code":-32002,"message":"Resource not found: session:<id>"}, also
		// for a real id from another cwd.
		Configure: qwenSetup.configure,
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
		LoadQuiet:  300 * time.Millisecond,
		PolicyArgs: byPolicy([]string{"--approval-mode", "yolo"}, []string{"--approval-mode", "default"}),
		// gemini answers -32603 "Internal error" with the reason in
		// data.details: "No previous sessions found for this project." or
		// "Invalid session identifier \"<id>\". …".
		SessionNotFound: func(e *jsonrpc.Error) bool {
			d := e.Details()
			return e.Code == CodeResourceNotFound || strings.HasPrefix(d, "No previous sessions found") || strings.HasPrefix(d, "Invalid session identifier")
		},
		Configure: geminiSetup.configure,
	})
}

// Kiro is `kiro-cli acp` (Kiro CLI; not verified here).
func Kiro() Definition {
	return define(kiroDescriptor(), Definition{Wiring: "Kiro account login; not verified here"})
}

// KiloPermissionEnv is the KILO_CONFIG_CONTENT that makes kilo ask before
// bash, edits and web fetches (opencode's permission config).
const KiloPermissionEnv = `{"permission":{"bash":"ask","edit":"ask","webfetch":"ask"}}`

// Kilo is `kilo acp` (@kilocode/cli, an opencode fork, verified with 7.7.7).
func Kilo() Definition {
	return define(kiloDescriptor(), Definition{
		Env: map[string]string{
			"KILO_DISABLE_AUTOUPDATE":     "1",
			"KILO_DISABLE_SHARE":          "1",
			"KILO_TELEMETRY_LEVEL":        "off",
			"KILO_DISABLE_SESSION_INGEST": "1",
		},
		Wiring: "an opencode-style provider in $XDG_CONFIG_HOME/kilo/kilo.json (npm @ai-sdk/openai-compatible, options.baseURL, " +
			"apiKey, models), \"model\": \"<provider>/<model>\" and \"enabled_providers\": [\"<provider>\"] (else it calls api.kilo.ai); " +
			"add KILO_DISABLE_MODELS_FETCH=1, KILO_DISABLE_LSP_DOWNLOAD=1 and KILO_DISABLE_DEFAULT_PLUGINS=1 offline",
		PolicyEnv: byPolicy[map[string]string](nil, map[string]string{"KILO_CONFIG_CONTENT": KiloPermissionEnv}),
		// kilo acp serves itself on a local port and connects to it.
		PortFlag:  "--port",
		Configure: kiloSetup.configure,
	})
}

// CopilotACP is `copilot --acp` (@github/copilot, verified with 1.0.102).
// The npm wrapper runs the platform binary with spawnSync and forwards no
// signal, so the binary is launched itself.
func CopilotACP() Definition {
	return define(copilotDescriptor(), Definition{
		Env:    map[string]string{"COPILOT_AUTO_UPDATE": "false"},
		Native: &NpmNative{Wrapper: "npm-loader.js", Package: "@github/copilot-{platform}", Path: "copilot"},
		Wiring: "BYOK without a GitHub login: COPILOT_OFFLINE=true, COPILOT_PROVIDER_BASE_URL (…/v1), COPILOT_PROVIDER_TYPE=openai, " +
			"COPILOT_PROVIDER_API_KEY, COPILOT_MODEL; the first start unpacks 235 MB into $XDG_CACHE_HOME/copilot",
		PolicyArgs: byPolicy([]string{"--allow-all-tools"}, nil),
		Configure:  copilotSetup.configure,
	})
}

// Droid is `droid exec --output-format acp` (@factory/cli 0.225.1 with its
// platform binary 0.225.2, verified with 0.225.2). Its model is chosen over
// ACP (session/set_model), not with --model.
func Droid() Definition {
	return define(droidDescriptor(), Definition{
		Env: map[string]string{"FACTORY_DROID_AUTO_UPDATE_ENABLED": "false"},
		Wiring: "custom_models in ~/.factory/config.json (provider generic-chat-completion-api, base_url, api_key, model), " +
			"offered over ACP as custom:<model>-<index> (the first is the default), and FACTORY_AIRGAP_ENABLED=1 " +
			"(else session/new asks for FACTORY_API_KEY); FACTORY_DISABLE_KEYRING=1",
		Configure: droidSetup.configure,
	})
}

// CodexACP is Zed's codex-acp (@zed-industries/codex-acp, verified with
// 0.16.0). Its npm wrapper runs the native binary with spawnSync, forwards
// no signal and the binary outlives stdin's end, so the binary is launched
// itself.
func CodexACP() Definition {
	return define(codexACPDescriptor(), Definition{
		Native: &NpmNative{Wrapper: "codex-acp.js", Package: "@zed-industries/codex-acp-{platform}", Path: "bin/codex-acp"},
		// It stays after stdin's end until signalled (its session file is
		// written as the turn goes).
		ExitTimeout: time.Second,
		Wiring: "Codex's $CODEX_HOME/config.toml: a custom model_provider (base_url, wire_api = \"responses\", env_key) and a model " +
			"Codex knows (else it answers \"Model metadata … not found\"); without bubblewrap the default sandbox fails: " +
			"sandbox_mode = \"danger-full-access\" (or install bwrap)",
		// approval_policy "untrusted" asks before every command that is not
		// known to be safe; "never" runs them.
		PolicyArgs: byPolicy([]string{"-c", `approval_policy="never"`}, []string{"-c", `approval_policy="untrusted"`}),
		Configure:  codexACPSetup.configure,
	})
}

// ClaudeAgentACP is Zed's claude-agent-acp (@zed-industries/claude-agent-acp,
// verified with 0.23.1, which bundles the Claude Agent SDK 0.2.83).
func ClaudeAgentACP() Definition {
	return define(claudeAgentACPDescriptor(), Definition{
		Env: map[string]string{
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
			"DISABLE_TELEMETRY":                        "1",
			"DISABLE_AUTOUPDATER":                      "1",
			"DISABLE_ERROR_REPORTING":                  "1",
		},
		// As root, session/new fails: "--dangerously-skip-permissions cannot
		// be used with root/sudo privileges".
		RootEnv: map[string]string{"IS_SANDBOX": "1"},
		// Its Bash tool keeps its files in $CLAUDE_CODE_TMPDIR, else /tmp
		// (not TMPDIR).
		TempEnv: "CLAUDE_CODE_TMPDIR",
		// It stays after stdin's end until signalled.
		ExitTimeout: time.Second,
		Wiring: "ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (Anthropic Messages API), CLAUDE_CONFIG_DIR; " +
			"CLAUDE_CODE_EXECUTABLE may point at an installed claude instead of the bundled one",
		Configure: claudeAgentACPSetup.configure,
	})
}
