// Descriptors: the unstructured print-mode CLIs, as the registry detects
// them and a run launches them (see Command for each command line).

package plain

import (
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
)

// Descriptor returns the descriptor of cli. Qwen has none here: the registry
// runs Qwen Code over ACP. An unknown CLI (or Qwen) returns false.
func Descriptor(cli CLI) (registry.Definition, bool) {
	info, ok := clis[cli]
	if !ok || info.descriptor == nil {
		return registry.Definition{}, false
	}
	return info.descriptor(), true
}

// shape is the common shape of an unstructured print-mode adapter.
func shape(cli CLI, name, exe string) registry.Definition {
	return registry.Definition{
		ID: string(cli), Name: name, Executable: exe,
		Format: registry.FormatPlain, Resume: registry.ResumeNone, Skills: registry.SkillsInstructions,
		Models: registry.Models{FreeForm: true},
	}
}

// antigravityDescriptor is `agy --print ... PROMPT`; its session is found in
// its session directory (registry.ResumeSnapshot) and continued with --resume.
func antigravityDescriptor() registry.Definition {
	d := shape(Antigravity, "Antigravity CLI", "agy")
	d.Args = registry.ArgSpec{Base: []string{"--print"}, Model: "--model", Resume: DefaultResumeFlag}
	d.Prompt = registry.DeliverArgv
	d.Resume = registry.ResumeSnapshot
	d.Verified = registry.Fixtures("providers/plain TestAntigravityStreamsAndDiscoversSession",
		"agy installs from antigravity.google (no registry package) and signs in to Google")
	d.Models.Fallback = []string{"gemini-2.5-pro", "gemini-2.5-flash", "claude-sonnet-4"}
	d.Auth.Note = "the login lives in the system keyring; not checked (a run reports sign-in failures)"
	d.InstallHint = "see https://antigravity.google"
	return d
}

// aiderDescriptor is `aider ... --message PROMPT` (or --message-file).
func aiderDescriptor() registry.Definition {
	d := shape(Aider, "Aider", "aider")
	d.Args = registry.ArgSpec{
		Base:  []string{"--no-pretty", "--no-git", "--no-auto-commits", "--no-suggest-shell-commands", "--no-show-model-warnings"},
		Model: "--model", Prompt: "--message", PromptFile: "--message-file",
		Accept: []string{"--yes-always"},
	}
	d.Prompt, d.PromptFallback = registry.DeliverArgv, registry.DeliverFile
	d.Verified = registry.Fixtures("providers/plain TestPromptDelivery",
		"Aider is a Python package (aider-chat), not among the pinned CLIs CI installs")
	d.Models.Fallback = []string{"sonnet", "gpt-4o", "deepseek/deepseek-chat"}
	d.Auth = registry.AuthCheck{Env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"}, Files: []string{"~/.aider.conf.yml", "~/.env"}}
	d.InstallHint = "python -m pip install aider-install && aider-install"
	d.Docs = "https://aider.chat/docs/install.html"
	return d
}

// grokDescriptor is `grok -p PROMPT`.
func grokDescriptor() registry.Definition {
	d := shape(Grok, "Grok Build", "grok")
	d.Args = registry.ArgSpec{Prompt: "-p", Model: "--model", Effort: "--effort"}
	d.Prompt = registry.DeliverArgv
	d.Caps.Effort = true
	d.Verified = registry.Fixtures("providers/plain TestCommands",
		"Grok Build installs by x.ai's download script (no registry package) and signs in to x.ai")
	d.Models = registry.Models{ // `grok models` is the closed list
		Command:  &registry.ModelCommand{Args: []string{"models"}},
		Fallback: []string{"grok-build", "grok-4.3", "grok-4.20-reasoning"},
	}
	d.Auth = registry.AuthCheck{Env: []string{"XAI_API_KEY"}, Files: []string{"~/.grok/auth.json"}}
	d.InstallHint = "curl -fsSL https://x.ai/cli/install.sh | bash"
	d.Docs = "https://x.ai/cli"
	return d
}

// deepseekDescriptor is `deepseek exec PROMPT` (also shipped as codewhale).
func deepseekDescriptor() registry.Definition {
	d := shape(DeepSeek, "DeepSeek TUI", "deepseek")
	d.Fallbacks = []string{"codewhale"}
	d.Verified = registry.Fixtures("providers/plain TestCommands", "DeepSeek TUI is in no registry reachable here")
	d.Args = registry.ArgSpec{Base: []string{"exec"}, Model: "--model", Accept: []string{"--auto"}}
	d.Prompt = registry.DeliverArgv
	d.Models.Fallback = []string{"deepseek-v4-pro", "deepseek-flash"}
	d.Auth = registry.AuthCheck{Env: []string{"DEEPSEEK_API_KEY"}, Files: []string{"~/.deepseek/config.toml"}}
	d.InstallHint = "install DeepSeek TUI (the `deepseek` dispatcher, also shipped as `codewhale`)"
	return d
}

// atomcodeDescriptor is `atomcode --prompt-file F`.
func atomcodeDescriptor() registry.Definition {
	d := shape(AtomCode, "AtomCode CLI", "atomcode")
	d.Args = registry.ArgSpec{Model: "--model", PromptFile: "--prompt-file", Accept: []string{"-y"}}
	d.Prompt = registry.DeliverFile
	d.Verified = registry.Fixtures("providers/plain TestPromptDelivery", "@atomgit.com/atomcode is not served by the npm registry reachable here")
	d.Models.Fallback = []string{"claude-sonnet-4-6", "gpt-5.2", "glm-5.2", "deepseek-v4"}
	d.Auth = registry.AuthCheck{Files: []string{"~/.atomcode/config.toml"}}
	d.InstallHint = "npm install -g @atomgit.com/atomcode"
	d.Docs = "https://atomcode.atomgit.com/docs/en/headless-daemon.html"
	return d
}

// ContinueVerified are the Continue CLI versions the e2e tests ran.
var ContinueVerified = []string{"1.5.47"}

// continueDescriptor is Continue's `cn -p` (@continuedev/cli), the prompt on
// stdin. It prints the final answer only (no events, no tool calls); the
// model is the one of its config (~/.continue/config.yaml: provider, model,
// apiBase, apiKey), so a chat sets no model.
func continueDescriptor() registry.Definition {
	d := shape(Continue, "Continue CLI", "cn")
	d.VerifiedVersions = append([]string(nil), ContinueVerified...)
	// cn loads a 56 MB bundle: over a second alone, more beside the other
	// probes on a small machine.
	d.Version.Timeout = 30 * time.Second
	d.Verified = registry.RealCLI("providers/plain TestContinueE2E, TestContinueE2EFailure, TestContinueE2ECancel, TestContinueVersionProbe")
	d.Args = registry.ArgSpec{Base: []string{"-p"}, Accept: []string{"--auto"}}
	d.Prompt = registry.DeliverStdin
	d.Models = registry.Models{}
	d.Env = map[string]string{"CONTINUE_METRICS_ENABLED": "0", "CONTINUE_CLI_ENABLE_TELEMETRY": "0"}
	d.PassEnv = []string{"CONTINUE_GLOBAL_DIR"}
	d.Auth = registry.AuthCheck{
		Files: []string{"${CONTINUE_GLOBAL_DIR}/config.yaml", "~/.continue/config.yaml"},
		Note:  "a config file shows a model was set up; its key and a Continue Hub login (`cn login`) are not checked",
		Login: "cn login",
	}
	d.State = registry.StateSpec{Env: map[string]string{"CONTINUE_GLOBAL_DIR": ".continue"}}
	d.InstallHint = "npm install -g @continuedev/cli"
	d.Docs = "https://docs.continue.dev/guides/cli"
	return d
}

// crushDescriptor is Charm's Crush, `crush run --quiet` with the prompt on
// stdin (its docs: the prompt as arguments or piped in; a non-interactive
// run approves every tool itself). Its session id is not printed, so no
// run resumes.
func crushDescriptor() registry.Definition {
	d := shape(Crush, "Crush", "crush")
	d.Verified = registry.Fixtures("providers/plain TestCommands, TestCrushRun",
		"@charmland/crush downloads its binary from GitHub when installed and the Go proxy does not serve github.com/charmbracelet/crush@v0.96.1: it cannot be installed here")
	d.Args = registry.ArgSpec{Base: []string{"run", "--quiet"}, Model: "--model"}
	d.Prompt = registry.DeliverStdin
	// "model" or "provider/model" of its configured providers.
	d.Models.Fallback = []string{"claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro"}
	d.PassEnv = []string{"CRUSH_GLOBAL_CONFIG", "CRUSH_GLOBAL_DATA"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY"},
		Files: []string{"${XDG_CONFIG_HOME}/crush/crush.json", "~/.config/crush/crush.json", "~/.local/share/crush/crush.json"},
		Note:  "providers configured in a project's crush.json are not checked",
	}
	d.InstallHint = "npm install -g @charmland/crush (its install downloads the binary from GitHub)"
	d.Docs = "https://github.com/charmbracelet/crush"
	return d
}

// JulesDescriptor describes Google's Jules Tools CLI (`jules`, npm
// @google/jules). It is detected only: Jules runs its tasks in Google's
// cloud (`jules remote new --repo . --session TASK` starts one and returns),
// so no provider here runs a turn with it.
func JulesDescriptor() registry.Definition {
	d := shape("jules", "Jules Tools", "jules")
	d.Verified = registry.DocsOnly("a cloud-task CLI: its npm package downloads its binary from storage.googleapis.com at the first start, and its work runs in Google's cloud, not on this host")
	d.Args = registry.ArgSpec{Base: []string{"remote", "new", "--repo", "."}, Prompt: "--session"}
	d.Prompt = registry.DeliverArgv
	d.Models = registry.Models{}
	d.Auth = registry.AuthCheck{Note: "`jules login` signs in with a Google account; not checked", Login: "jules login"}
	d.InstallHint = "npm install -g @google/jules"
	d.Docs = "https://jules.google/docs/cli/reference"
	return d
}
