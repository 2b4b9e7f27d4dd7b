// Descriptors: the JSON-event-stream CLIs (OpenCode's and MiMo's run mode,
// Cursor Agent, Copilot, Qoder, grok-cli), as the registry detects them and
// a run launches them.

package jsonstream

import (
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
)

// Descriptor returns the descriptor of dialect d: the command line Command
// builds, the prompt on stdin, resume and fork flags. The descriptor's id is
// the dialect's name, except OpenCode's, which is "opencode-run" (the id
// "opencode" is OpenCode over ACP). An unknown dialect returns false.
func Descriptor(d Dialect) (registry.Definition, bool) {
	t, ok := dialects[d]
	if !ok {
		return registry.Definition{}, false
	}
	return t.descriptor(), true
}

// openCodeDescriptor is `opencode run --format json`.
func openCodeDescriptor() registry.Definition {
	return registry.Definition{
		ID: "opencode-run", Name: "OpenCode (run --format json)", Executable: "opencode", Fallbacks: []string{"opencode-cli"},
		VerifiedVersions: []string{"1.18.33"},
		Verified:         registry.RealCLI("providers/jsonstream TestOpenCodeE2E"),
		Models: registry.Models{
			Command:  &registry.ModelCommand{Args: []string{"models"}, Parse: registry.ParseSlashModels},
			Fallback: []string{"anthropic/claude-sonnet-4-5", "openai/gpt-5", "google/gemini-2.5-pro"},
			// Any provider/model of opencode.json; --variant is provider-specific.
			FreeForm: true,
		},
		Args: registry.ArgSpec{
			Base:  []string{"run", "--format", "json", "--thinking"},
			Model: "--model", Effort: "--variant", Resume: "-s", Fork: "--fork",
			Accept: []string{"--auto"},
		},
		Prompt: registry.DeliverStdin, Format: registry.FormatJSONEvents, Dialect: registry.DialectOpenCode,
		Resume: registry.ResumeCLIFlag, NativeFork: true,
		Caps:   registry.Capabilities{Effort: true},
		Skills: registry.SkillsInstructions,
		// OpenCode runs many providers; these are the keys and the config of
		// the common ones.
		PassEnv: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
			"OPENCODE_CONFIG"},
		Auth: registry.AuthCheck{
			Files: []string{"${XDG_DATA_HOME}/opencode/auth.json", "~/.local/share/opencode/auth.json"},
			Note:  "providers configured with API keys in opencode.json or the environment are not checked",
			Login: "opencode auth login",
		},
		// Its config (opencode.json, providers) is copied into a sandboxed
		// chat's home; sessions stay per chat under XDG_DATA_HOME.
		State:       registry.StateSpec{Shared: []string{"${XDG_CONFIG_HOME}/opencode"}},
		InstallHint: "npm install -g opencode-ai",
		Docs:        "https://opencode.ai/docs/cli/",
	}
}

// mimoDescriptor is MiMo Code, an OpenCode derivative with its command line.
func mimoDescriptor() registry.Definition {
	d := openCodeDescriptor()
	d.ID, d.Name, d.Executable, d.Fallbacks = "mimo", "MiMo Code", "mimo", nil
	d.VerifiedVersions = nil
	d.Verified = registry.Fixtures("providers/jsonstream TestGolden (mimo-text)",
		"MiMo Code is in no registry reachable here; its events are OpenCode's, which run against the real opencode")
	d.Dialect = registry.DialectMimo
	d.Models = registry.Models{
		Command:  &registry.ModelCommand{Args: []string{"models"}, Parse: registry.ParseSlashModels},
		Fallback: []string{"xiaomi/mimo-v2.5-pro", "xiaomi/mimo-v2.5", "xiaomi/mimo-v2-flash"},
		FreeForm: true,
	}
	d.Auth = registry.AuthCheck{Note: "providers are configured with `mimo providers`; not checked"}
	d.InstallHint = "install MiMo Code (the `mimo` CLI, an OpenCode derivative) from Xiaomi's release page"
	d.Docs = "https://github.com/XiaomiMiMo"
	return d
}

// KiloVerified are the Kilo Code CLI versions the e2e tests ran.
var KiloVerified = []string{"7.7.7"}

// kiloDescriptor is Kilo Code's `kilo run --format json`, an OpenCode fork
// with OpenCode's command line and events; the id "kilo" is Kilo over ACP.
func kiloDescriptor() registry.Definition {
	d := openCodeDescriptor()
	d.ID, d.Name, d.Executable, d.Fallbacks = "kilo-run", "Kilo Code (run --format json)", "kilo", []string{"kilocode"}
	d.VerifiedVersions = append([]string(nil), KiloVerified...)
	d.Verified = registry.RealCLI("providers/jsonstream TestKiloRunE2E, TestKiloRunVersionProbe")
	// `kilo --version` takes over 4 s alone (it boots its runtime).
	d.Version.Timeout = 30 * time.Second
	d.Dialect = registry.DialectKilo
	// Offline switches; the operator's provider config stays theirs.
	d.Env = map[string]string{"KILO_DISABLE_AUTOUPDATE": "1", "KILO_DISABLE_SHARE": "1", "KILO_TELEMETRY_LEVEL": "off"}
	d.PassEnv, d.Auth, d.State = KiloPassEnv(), KiloAuth(), KiloState
	d.InstallHint = "npm install -g @kilocode/cli"
	d.Docs = "https://kilo.ai/docs/cli"
	return d
}

// KiloPassEnv are the host variables Kilo reads its configuration and the
// common providers' keys from, in its run mode (here) and over ACP
// (providers/acp).
func KiloPassEnv() []string {
	return []string{"KILO_CONFIG", "KILO_CONFIG_DIR", "KILO_CONFIG_CONTENT", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"}
}

// KiloState is what a sandboxed chat's home gets of Kilo's shared
// configuration, in both modes.
var KiloState = registry.StateSpec{Shared: []string{"${XDG_CONFIG_HOME}/kilo"}}

// KiloAuth is how Kilo's sign-in is found, in both of its modes (see
// KiloPassEnv).
func KiloAuth() registry.AuthCheck {
	return registry.AuthCheck{
		Env:   []string{"KILO_API_KEY"},
		Files: []string{"${XDG_DATA_HOME}/kilo/auth.json", "~/.local/share/kilo/auth.json"},
		Note:  "providers configured with their keys in kilo.json (BYOK, enabled_providers) are not checked",
		Login: "kilo auth login",
	}
}

// cursorDescriptor is `cursor-agent --print --output-format stream-json`.
func cursorDescriptor() registry.Definition {
	return registry.Definition{
		ID: string(CursorProviderID), Name: "Cursor Agent", Executable: "cursor-agent", Fallbacks: []string{"agent"},
		Verified: registry.Fixtures("providers/jsonstream TestCursorFixtures",
			"Cursor Agent installs by a download script from cursor.com (no registry package) and signs in to Cursor"),
		Models: registry.Models{
			Command:  &registry.ModelCommand{Args: []string{"models"}, Parse: registry.ParseCursorModels},
			Fallback: []string{"auto", "sonnet-4", "gpt-5"},
			// `cursor-agent models` is the closed list of the account's models.
		},
		Args: registry.ArgSpec{
			Base:  []string{"--print", "--output-format", "stream-json", "--stream-partial-output", "--trust"},
			Model: "--model", Resume: "--resume",
			Accept: []string{"--force"},
		},
		Prompt: registry.DeliverStdin, Format: registry.FormatJSONEvents, Dialect: registry.DialectCursorAgent, Resume: registry.ResumeCLIFlag,
		Skills: registry.SkillsInstructions,
		Auth: registry.AuthCheck{
			Env:   []string{"CURSOR_API_KEY"},
			Files: []string{"~/.config/cursor/auth.json", "~/.cursor/cli-config.json"},
			Login: "cursor-agent login",
		},
		InstallHint: "curl https://cursor.com/install -fsS | bash",
		Docs:        "https://cursor.com/docs/cli/reference/output-format",
	}
}

// CopilotVerified are the Copilot CLI versions the JSON mode's e2e test ran.
var CopilotVerified = []string{"1.0.102"}

// copilotDescriptor is `copilot --output-format json`. Its npm wrapper
// forwards no signal: a cancelled run is killed with its process group
// after the grace (copilot-acp launches the platform binary instead).
func copilotDescriptor() registry.Definition {
	return registry.Definition{
		ID: string(CopilotProviderID), Name: "GitHub Copilot CLI", Executable: "copilot",
		VerifiedVersions: append([]string(nil), CopilotVerified...),
		Verified:         registry.RealCLI("providers/jsonstream TestCopilotJSONE2E, TestCopilotVersionProbe"),
		// BYOK providers take their own model ids (COPILOT_MODEL).
		Models: registry.Models{Fallback: []string{"claude-sonnet-4.6", "gpt-5.2"}, FreeForm: true},
		Args: registry.ArgSpec{
			Base:  []string{"--output-format", "json"},
			Model: "--model", Resume: "--resume",
			Accept: []string{"--allow-all-tools"},
		},
		Prompt: registry.DeliverStdin, Format: registry.FormatJSONEvents, Dialect: registry.DialectCopilot, Resume: registry.ResumeCLIFlag,
		Skills:  registry.SkillsInstructions,
		PassEnv: []string{"COPILOT_HOME", "COPILOT_OFFLINE", "COPILOT_PROVIDER_TYPE", "COPILOT_MODEL"},
		// A BYOK provider (COPILOT_PROVIDER_BASE_URL and its key) needs no
		// GitHub login, as for copilot-acp.
		Auth: registry.AuthCheck{
			Env:   []string{"COPILOT_PROVIDER_BASE_URL", "COPILOT_PROVIDER_API_KEY", "COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
			Files: []string{"~/.copilot/config.json"},
			Note:  "the OAuth token may live in the system keyring",
		},
		State:       registry.StateSpec{Env: map[string]string{"COPILOT_HOME": ".copilot"}},
		InstallHint: "npm install -g @github/copilot",
		Docs:        "https://docs.github.com/en/copilot/how-tos/use-copilot-agents/use-copilot-cli",
	}
}

// qoderDescriptor is `qodercli -p --output-format stream-json`.
func qoderDescriptor() registry.Definition {
	return registry.Definition{
		ID: string(QoderProviderID), Name: "Qoder CLI", Executable: "qodercli",
		Verified: registry.Fixtures("providers/jsonstream TestQoderFixtures",
			"qodercli 1.1.52 runs custom (BYOK) models only when logged in to Qoder's service: offline it answers \"Not logged in\" and sends nothing to a local model"),
		// Qoder's model tiers: a closed list.
		Models: registry.Models{Fallback: []string{"auto", "lite", "efficient", "performance", "ultimate"}},
		Args: registry.ArgSpec{
			Base:  []string{"-p", "--output-format", "stream-json"},
			Model: "--model", Resume: "-r",
			Accept: []string{"--yolo"},
		},
		Prompt: registry.DeliverStdin, Format: registry.FormatJSONEvents, Dialect: registry.DialectQoder, Resume: registry.ResumeCLIFlag,
		Skills: registry.SkillsInstructions,
		Auth: registry.AuthCheck{
			Env:   []string{"QODER_PERSONAL_ACCESS_TOKEN"},
			Files: []string{"~/.qoder/.auth/user", "~/.qoder.json"},
			Login: "qodercli login",
		},
		InstallHint: "npm install -g @qoder-ai/qodercli, then qodercli login",
		Docs:        "https://docs.qoder.com/cli",
	}
}

// GrokCLIVerified are the grok-cli versions the e2e tests ran.
var GrokCLIVerified = []string{"0.0.34"}

// grokCLIDescriptor is @vibe-kit/grok-cli's headless mode, `grok
// --prompt P`. Its executable is named grok like x.ai's Grok Build (the
// plain "grok" definition); an operator with both sets agents.<id>.bin.
// `grok --version` of 0.0.34 prints 1.0.1 (its command line declares that,
// not the package's version), so the version is read from the package.json
// beside the executable: an x.ai grok on PATH has none and shows as broken
// here. grok-cli keeps no session and, headless, runs every tool without
// asking.
func grokCLIDescriptor() registry.Definition {
	return registry.Definition{
		ID: string(GrokCLIProviderID), Name: "grok-cli (Vibe Kit)", Executable: "grok",
		Version:          registry.PackageJSONVersion,
		VerifiedVersions: append([]string(nil), GrokCLIVerified...),
		Verified:         registry.RealCLI("providers/jsonstream TestGrokCLIE2E, TestGrokCLIE2EFailures, TestGrokCLIE2ECancel, TestGrokCLIVersionProbe"),
		// Any model of the configured endpoint (GROK_BASE_URL).
		Models: registry.Models{Fallback: []string{"grok-code-fast-1", "grok-4-latest"}, FreeForm: true},
		Args:   registry.ArgSpec{Model: "--model", Prompt: "--prompt"},
		Prompt: registry.DeliverArgv, Format: registry.FormatJSONEvents, Dialect: registry.DialectGrokCLI,
		Resume: registry.ResumeNone, Skills: registry.SkillsInstructions,
		PassEnv: []string{"GROK_BASE_URL", "GROK_MODEL"},
		// grok-cli writes ~/.grok/user-settings.json without an apiKey on
		// its first start, so that file proves nothing and is not checked.
		Auth: registry.AuthCheck{
			Env:  []string{"GROK_API_KEY"},
			Note: "an apiKey saved in ~/.grok/user-settings.json is not checked; a run without any key fails saying so",
		},
		InstallHint: "npm install -g @vibe-kit/grok-cli",
		Docs:        "https://github.com/superagent-ai/grok-cli",
	}
}
