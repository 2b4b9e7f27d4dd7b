// Descriptors: the ACP agent CLIs, as the registry detects them and a run
// launches them. Definition (definition.go) adds what only this provider
// reads: environment, approval-policy arguments, session errors, wiring;
// the CLIs no real run verifies here, with no runtime specifics, are
// defined here whole (see unverified).

package acp

import (
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/jsonstream"
)

// shape is the common shape of an ACP adapter: the prompt, the model and
// (where the descriptor says so) resume go over the protocol.
func shape(id, name, exe string, base ...string) registry.Definition {
	return registry.Definition{
		ID: id, Name: name, Executable: exe,
		Args:   registry.ArgSpec{Base: base},
		Prompt: registry.DeliverProtocol, Format: registry.FormatACP, Resume: registry.ResumeProtocol,
		Caps:   registry.Capabilities{Interactions: true, Images: true},
		Skills: registry.SkillsInstructions,
		// ACP agents advertise their models in session/new and the model is
		// selected over the protocol, never on the command line.
		Models: registry.Models{FreeForm: true},
	}
}

// npmVerified is d as installed from the npm package pkg, verified at
// version by its end-to-end test against the real CLI (TestE2E/<id>).
func npmVerified(d registry.Definition, pkg, version, docs string) registry.Definition {
	d.VerifiedVersions = []string{version}
	d.Verified = registry.RealCLI("providers/acp TestE2E/" + d.ID)
	d.InstallHint = "npm install -g " + pkg
	d.Docs = docs
	return d
}

// fromDocs states that d's launch syntax follows its docs (checked by
// TestDefinitionsLaunch, the protocol by the fake agent's tests) and why
// no real CLI runs here.
func fromDocs(d registry.Definition, reason string) registry.Definition {
	d.Verified = registry.Fixtures("providers/acp TestDefinitionsLaunch", reason)
	return d
}

// unverified is the Definition of a CLI with no runtime specifics of its
// own that no real run verifies here (see fromDocs); wiring says how it is
// pointed at a model.
func unverified(d registry.Definition, reason, wiring string) Definition {
	return define(fromDocs(d, reason), Definition{Wiring: wiring + "; not verified here"})
}

// opencodeDescriptor is `opencode acp`; it shares the executable, versions,
// models and sign-in files of OpenCode's run mode. OpenCode over ACP does not
// fork.
func opencodeDescriptor() registry.Definition {
	run, _ := jsonstream.Descriptor(jsonstream.OpenCode)
	d := shape("opencode", "OpenCode", run.Executable, "acp")
	d.Fallbacks, d.VerifiedVersions, d.Models, d.Auth, d.State = run.Fallbacks, run.VerifiedVersions, run.Models, run.Auth, run.State
	d.PassEnv = append([]string(nil), run.PassEnv...)
	d.InstallHint, d.Docs = run.InstallHint, "https://opencode.ai/docs/acp/"
	d.Verified = registry.RealCLI("providers/acp TestE2E/opencode")
	return d
}

// geminiDescriptor is `gemini --acp`. It does not resume: see Gemini.
func geminiDescriptor() registry.Definition {
	d := shape("gemini", "Gemini CLI", "gemini", "--acp")
	d.Resume = registry.ResumeNone
	d.Models.Fallback = []string{"gemini-2.5-pro", "gemini-2.5-flash"}
	d.PassEnv = []string{"GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"},
		Files: []string{"~/.gemini/oauth_creds.json"},
	}
	d.State.Shared = []string{"~/.gemini/settings.json", "~/.gemini/google_accounts.json"}
	return npmVerified(d, "@google/gemini-cli", "0.61.0", "https://github.com/google-gemini/gemini-cli")
}

// qwenDescriptor is `qwen --acp`.
func qwenDescriptor() registry.Definition {
	d := shape("qwen", "Qwen Code", "qwen", "--acp")
	d.Models.Fallback = []string{"qwen3-coder-plus", "qwen3-coder-flash"}
	d.PassEnv = []string{"OPENAI_BASE_URL", "OPENAI_MODEL"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		Files: []string{"~/.qwen/oauth_creds.json"},
	}
	d.State.Shared = []string{"~/.qwen/settings.json"}
	return npmVerified(d, "@qwen-code/qwen-code", "0.24.4", "https://github.com/QwenLM/qwen-code")
}

// kiroDescriptor is `kiro-cli acp`.
func kiroDescriptor() registry.Definition {
	d := shape("kiro", "Kiro CLI", "kiro-cli", "acp")
	d.InstallHint = "curl -fsSL https://cli.kiro.dev/install | bash"
	d.Auth.Note = "login is kept by kiro-cli itself; not checked"
	return fromDocs(d, "Kiro CLI installs with its own script from kiro.dev and runs on a Kiro account; neither is reachable here")
}

// kiloDescriptor is `kilo acp` (also installed as kilocode).
func kiloDescriptor() registry.Definition {
	d := shape("kilo", "Kilo", "kilo", "acp")
	d.Fallbacks = []string{"kilocode"}
	d.PassEnv, d.Auth = jsonstream.KiloPassEnv(), jsonstream.KiloAuth() // as its run mode's
	d.State = jsonstream.KiloState
	return npmVerified(d, "@kilocode/cli", "7.7.7", "https://kilo.ai/docs/cli")
}

// copilotDescriptor is `copilot --acp` (GitHub Copilot CLI; its JSON mode is
// the jsonstream copilot definition).
func copilotDescriptor() registry.Definition {
	d := shape("copilot-acp", "GitHub Copilot CLI (ACP)", "copilot", "--acp", "--no-auto-update", "--disable-client-telemetry")
	d.PassEnv = []string{"COPILOT_HOME", "COPILOT_OFFLINE", "COPILOT_PROVIDER_TYPE", "COPILOT_MODEL"}
	d.Auth = registry.AuthCheck{
		// A BYOK provider (COPILOT_PROVIDER_BASE_URL, usually with
		// COPILOT_OFFLINE=true) needs no GitHub sign-in.
		Env:   []string{"COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
		Files: []string{"${COPILOT_HOME}/config.json", "~/.copilot/config.json"},
		Note:  "the OAuth token may live in the system keyring",
		Login: "copilot login",
	}
	d.State = registry.StateSpec{Env: map[string]string{"COPILOT_HOME": ".copilot"}}
	return npmVerified(d, "@github/copilot", "1.0.102", "https://docs.github.com/en/copilot/how-tos/use-copilot-agents/use-copilot-cli")
}

// droidDescriptor is `droid exec --output-format acp` (Factory).
func droidDescriptor() registry.Definition {
	d := shape("droid", "Factory Droid", "droid", "exec", "--output-format", "acp")
	d.PassEnv = []string{"FACTORY_AIRGAP_ENABLED", "FACTORY_DISABLE_KEYRING"}
	d.Auth = registry.AuthCheck{
		// Airgap mode runs the custom_models of ~/.factory/config.json
		// without a Factory account.
		Env:   []string{"FACTORY_API_KEY", "FACTORY_AIRGAP_ENABLED"},
		Files: []string{"~/.factory/auth.json"},
		Note:  "a login kept in the system keyring is not checked",
		Login: "droid (then /login)",
	}
	return npmVerified(d, "@factory/cli", "0.225.2", "https://docs.factory.ai/cli/droid-exec/overview")
}

// codexACPDescriptor is Zed's codex-acp (Codex as an ACP agent).
func codexACPDescriptor() registry.Definition {
	d := shape("codex-acp", "Codex (ACP, Zed's codex-acp)", "codex-acp")
	// codex-acp has no --version: the npm package's package.json says it.
	d.Version = registry.PackageJSONVersion
	d.PassEnv = []string{"OPENAI_BASE_URL", "CODEX_HOME"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
		Files: []string{"${CODEX_HOME}/auth.json", "~/.codex/auth.json"},
		Note:  "a custom model provider in config.toml (its env_key) is not checked",
		Login: "codex login",
	}
	d.State = registry.StateSpec{Env: map[string]string{"CODEX_HOME": ".codex"}, Shared: []string{"${CODEX_HOME}/config.toml"}}
	return npmVerified(d, "@zed-industries/codex-acp", "0.16.0", "https://github.com/zed-industries/codex-acp")
}

// claudeAgentACPDescriptor is Zed's claude-agent-acp (the Claude Agent SDK
// as an ACP agent).
func claudeAgentACPDescriptor() registry.Definition {
	d := shape("claude-agent-acp", "Claude Agent (ACP, Zed's claude-agent-acp)", "claude-agent-acp")
	// --version prints nothing (and --cli --version is the bundled Claude
	// Code's): the npm package's package.json says it.
	d.Version = registry.PackageJSONVersion
	d.PassEnv = []string{"ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_EXECUTABLE"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
		Files: []string{"${CLAUDE_CONFIG_DIR}/.credentials.json", "~/.claude/.credentials.json"},
		Login: "claude /login",
	}
	d.State = registry.StateSpec{Env: map[string]string{"CLAUDE_CONFIG_DIR": ".claude"}}
	return npmVerified(d, "@zed-industries/claude-agent-acp", "0.23.1", "https://github.com/zed-industries/claude-agent-acp")
}

// Devin is `devin acp` (Devin for Terminal; not verified here). OpenDesign
// adds --permission-mode dangerous; Threadline keeps the permission prompts.
func Devin() Definition {
	d := shape("devin", "Devin for Terminal", "devin", "acp")
	d.Models.Fallback = []string{"adaptive", "swe", "opus", "sonnet"}
	d.InstallHint = "see https://cli.devin.ai/docs"
	d.Auth.Note = "login is kept by devin itself; not checked"
	return unverified(d, "Devin for Terminal has its own installer and runs on a Devin account; neither is reachable here", "Devin account login")
}

// Hermes is `hermes acp` (Nous Research Hermes Agent; not verified here).
func Hermes() Definition {
	d := shape("hermes", "Hermes Agent", "hermes", "acp")
	d.Auth = registry.AuthCheck{Env: []string{"XAI_API_KEY", "OPENAI_API_KEY"}, Files: []string{"~/.hermes/.env", "~/.hermes/auth.json"}}
	d.InstallHint = "see https://github.com/NousResearch/hermes-agent"
	return unverified(d, "Hermes Agent installs from its GitHub repository, which is not reachable here", "hermes auth add <provider> or keys in ~/.hermes/.env")
}

// Vibe is `vibe-acp` (Mistral Vibe; not verified here).
func Vibe() Definition {
	d := shape("vibe", "Mistral Vibe", "vibe-acp")
	d.Auth = registry.AuthCheck{Env: []string{"MISTRAL_API_KEY"}, Files: []string{"~/.vibe/.env"}}
	d.InstallHint = "uv tool install mistral-vibe"
	return unverified(d, "Mistral Vibe is a Python package; PyPI is not reachable here", "MISTRAL_API_KEY or ~/.vibe/config.toml")
}

// Reasonix is `reasonix acp` (DeepSeek Reasonix, also installed as dsnix;
// not verified here).
func Reasonix() Definition {
	d := shape("reasonix", "DeepSeek Reasonix", "reasonix", "acp")
	d.Fallbacks = []string{"dsnix"}
	d.Models.Fallback = []string{"deepseek-v4-pro", "deepseek-v4-flash"}
	d.Auth = registry.AuthCheck{Env: []string{"DEEPSEEK_API_KEY"}, Files: []string{"~/.reasonix/config.json"}}
	d.InstallHint = "see https://github.com/esengine/DeepSeek-Reasonix"
	return unverified(d, "DeepSeek Reasonix installs from its GitHub repository, which is not reachable here", "DEEPSEEK_API_KEY")
}

// Vela is `vela agent run --runtime opencode` (AMR; not verified here).
func Vela() Definition {
	d := shape("vela", "Vela (AMR)", "vela", "agent", "run", "--runtime", "opencode")
	d.PassEnv = []string{"VELA_LINK_URL"}
	d.Auth = registry.AuthCheck{Env: []string{"VELA_RUNTIME_KEY"}}
	d.InstallHint = "install the vela CLI and set VELA_RUNTIME_KEY and VELA_LINK_URL"
	return unverified(d, "the vela CLI is in no registry reachable here", "VELA_RUNTIME_KEY and VELA_LINK_URL (an OpenAI-compatible endpoint)")
}

// Trae is `traecli acp serve` (Trae CLI; not verified here). OpenDesign
// adds --yolo; Threadline keeps the permission prompts.
func Trae() Definition {
	d := shape("trae", "Trae CLI", "traecli", "acp", "serve")
	d.Version.Timeout = 10 * time.Second
	d.InstallHint = "see https://docs.trae.ai/cli"
	d.Auth.Note = "login is kept by traecli itself; not checked"
	return unverified(d, "Trae CLI has its own installer and runs on a Trae account; neither is reachable here", "Trae account login")
}
