// Built-in adapter definitions, one per supported agent CLI.

package registry

import (
	"regexp"
	"sort"
	"strings"
	"time"
	"unicode"
)

// acp returns the common shape of an ACP adapter.
func acp(id, name, exe string, base ...string) Definition {
	return Definition{
		ID: id, Name: name, Executable: exe,
		Args:   ArgSpec{Base: base},
		Prompt: DeliverProtocol, Format: FormatACP, Resume: ResumeProtocol,
		Caps:   Capabilities{Interactions: true, Images: true},
		Skills: SkillsInstructions,
		// ACP agents advertise their models in session/new and the model is
		// selected over the protocol, never on the command line.
		Models: Models{FreeForm: true},
	}
}

// plainCLI returns the common shape of an unstructured print-mode adapter.
func plainCLI(id, name, exe string) Definition {
	return Definition{
		ID: id, Name: name, Executable: exe,
		Format: FormatPlain, Resume: ResumeNone, Skills: SkillsInstructions,
		Models: Models{FreeForm: true},
	}
}

// builtins builds the table fresh on every call so callers may modify it.
func builtins() []Definition {
	claude := Definition{
		ID: "claude", Name: "Claude Code", Executable: "claude",
		VerifiedVersions: []string{"2.1.328"},
		// Aliases or full model ids (claude-sonnet-4-5-20250929).
		Models:  Models{Fallback: []string{"sonnet", "opus", "haiku"}, FreeForm: true},
		Efforts: []string{"low", "medium", "high", "xhigh", "max"},
		Args: ArgSpec{
			Base:  []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--include-partial-messages"},
			Model: "--model", Effort: "--effort", Resume: "--resume", Fork: "--fork-session",
		},
		Prompt: DeliverProtocol, Format: FormatClaudeStreamJSON, Resume: ResumeCLIFlag, NativeFork: true,
		Caps:   Capabilities{Interactions: true, Images: true, Effort: true, Plan: true},
		Skills: SkillsSlash,
		Auth: AuthCheck{
			Env:   []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
			Files: []string{"${CLAUDE_CONFIG_DIR}/.credentials.json", "~/.claude/.credentials.json"},
			Note:  "on macOS the login lives in the keychain and is not checked",
		},
		InstallHint: "npm install -g @anthropic-ai/claude-code",
		Docs:        "https://docs.anthropic.com/en/docs/claude-code",
	}
	codex := Definition{
		ID: "codex", Name: "Codex", Executable: "codex",
		VerifiedVersions: []string{"0.169.0"},
		Version:          VersionProbe{Pattern: regexp.MustCompile(`codex-cli (\d+\.\d+\.\d+\S*)`)},
		// The live catalog comes over the protocol (model/list); models of
		// providers configured in config.toml are valid too.
		Models: Models{Fallback: []string{"gpt-5.5", "gpt-5.4", "gpt-5.4-mini"}, FreeForm: true},
		Args:   ArgSpec{Base: []string{"app-server"}},
		Prompt: DeliverProtocol, Format: FormatCodexAppServer, Resume: ResumeProtocol, NativeFork: true,
		Caps:   Capabilities{Interactions: true, Images: true, Effort: true, Plan: true},
		Skills: SkillsDollar,
		Auth: AuthCheck{
			Env:   []string{"OPENAI_API_KEY"},
			Files: []string{"${CODEX_HOME}/auth.json", "~/.codex/auth.json"},
		},
		InstallHint: "npm install -g @openai/codex",
		Docs:        "https://developers.openai.com/codex/cli",
	}
	minimax := codex.clone()
	minimax.ID, minimax.Name = "minimax", "MiniMax (Codex app-server)"
	minimax.Models = Models{Fallback: []string{"MiniMax-M2.5", "MiniMax-M2"}, FreeForm: true}
	minimax.Auth = AuthCheck{Env: []string{"MINIMAX_API_KEY"}}
	minimax.Docs = "https://platform.minimax.io/docs"

	opencode := Definition{
		ID: "opencode", Name: "OpenCode", Executable: "opencode", Fallbacks: []string{"opencode-cli"},
		VerifiedVersions: []string{"1.18.33"},
		Models: Models{
			Command:  &ModelCommand{Args: []string{"models"}, Parse: ParseSlashModels},
			Fallback: []string{"anthropic/claude-sonnet-4-5", "openai/gpt-5", "google/gemini-2.5-pro"},
			// Any provider/model of opencode.json; --variant is provider-specific.
			FreeForm: true,
		},
		Args: ArgSpec{
			Base:  []string{"run", "--format", "json"},
			Model: "--model", Effort: "--variant", Resume: "-s", Fork: "--fork",
		},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectOpenCode,
		Resume: ResumeCLIFlag, NativeFork: true,
		Caps:   Capabilities{Effort: true},
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Files: []string{"${XDG_DATA_HOME}/opencode/auth.json", "~/.local/share/opencode/auth.json"},
			Note:  "providers configured with API keys in opencode.json or the environment are not checked",
		},
		InstallHint: "npm install -g opencode-ai",
		Docs:        "https://opencode.ai/docs/cli/",
	}
	// opencode is driven over ACP (`opencode acp`): approvals reach the chat as
	// cards. Its print mode (`opencode run --format json`) is opencode-run.
	opencodeRun := opencode.clone()
	opencodeRun.ID, opencodeRun.Name = "opencode-run", "OpenCode (run --format json)"
	mimo := opencode.clone()
	mimo.ID, mimo.Name, mimo.Executable, mimo.Fallbacks = "mimo", "MiMo Code", "mimo", nil
	mimo.VerifiedVersions = nil
	mimo.Dialect = DialectMimo
	mimo.Models = Models{
		Command:  &ModelCommand{Args: []string{"models"}, Parse: ParseSlashModels},
		Fallback: []string{"xiaomi/mimo-v2.5-pro", "xiaomi/mimo-v2.5", "xiaomi/mimo-v2-flash"},
		FreeForm: true,
	}
	mimo.Auth = AuthCheck{Note: "providers are configured with `mimo providers`; not checked"}
	mimo.InstallHint = "install MiMo Code (the `mimo` CLI, an OpenCode derivative) from Xiaomi's release page"
	mimo.Docs = "https://github.com/XiaomiMiMo"

	gemini := acp("gemini", "Gemini CLI", "gemini", "--acp")
	gemini.VerifiedVersions = []string{"0.61.0"}
	gemini.Models.Fallback = []string{"gemini-2.5-pro", "gemini-2.5-flash"}
	gemini.Auth = AuthCheck{
		Env:   []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"},
		Files: []string{"~/.gemini/oauth_creds.json"},
	}
	gemini.InstallHint = "npm install -g @google/gemini-cli"
	gemini.Docs = "https://github.com/google-gemini/gemini-cli"

	qwen := acp("qwen", "Qwen Code", "qwen", "--acp")
	qwen.VerifiedVersions = []string{"0.24.4"}
	qwen.Models.Fallback = []string{"qwen3-coder-plus", "qwen3-coder-flash"}
	qwen.Auth = AuthCheck{
		Env:   []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		Files: []string{"~/.qwen/oauth_creds.json"},
	}
	qwen.InstallHint = "npm install -g @qwen-code/qwen-code"
	qwen.Docs = "https://github.com/QwenLM/qwen-code"

	kimi := Definition{
		ID: "kimi", Name: "Kimi Code CLI", Executable: "kimi",
		Models: Models{Fallback: []string{"kimi-k2-turbo-preview", "kimi-k2.5", "moonshot-v1-32k"}, FreeForm: true},
		Args: ArgSpec{
			Base: []string{"--output-format", "stream-json"}, Prompt: "-p",
			Model: "--model", Resume: "--session",
		},
		Prompt: DeliverArgv, PromptFallback: DeliverStdin,
		Format: FormatKimiStreamJSON, Resume: ResumeCLIFlag, NativeFork: false,
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Env:   []string{"KIMI_API_KEY", "MOONSHOT_API_KEY"},
			Files: []string{"${KIMI_CODE_HOME}/config.toml", "~/.kimi-code/config.toml", "~/.kimi/config.toml", "~/.kimi/credentials"},
			Note:  "a config file shows the CLI was set up; whether its login is still valid is not checked",
		},
		InstallHint: "uv tool install kimi-cli (or npm install -g @moonshot-ai/kimi-code)",
		Docs:        "https://moonshotai.github.io/kimi-cli/",
	}

	kiro := acp("kiro", "Kiro CLI", "kiro-cli", "acp")
	kiro.InstallHint = "curl -fsSL https://cli.kiro.dev/install | bash"
	kiro.Auth.Note = "login is kept by kiro-cli itself; not checked"
	kilo := acp("kilo", "Kilo", "kilo", "acp")
	kilo.Fallbacks = []string{"kilocode"}
	kilo.InstallHint = "npm install -g @kilocode/cli"
	kilo.Auth.Note = "login is kept by kilo itself; not checked"
	devin := acp("devin", "Devin for Terminal", "devin", "--permission-mode", "dangerous", "--respect-workspace-trust", "false", "acp")
	devin.Models.Fallback = []string{"adaptive", "swe", "opus", "sonnet"}
	devin.InstallHint = "see https://cli.devin.ai/docs"
	devin.Auth.Note = "login is kept by devin itself; not checked"
	hermes := acp("hermes", "Hermes Agent", "hermes", "acp", "--accept-hooks")
	hermes.Auth = AuthCheck{Env: []string{"XAI_API_KEY", "OPENAI_API_KEY"}, Files: []string{"~/.hermes/.env", "~/.hermes/auth.json"}}
	hermes.InstallHint = "see https://github.com/NousResearch/hermes-agent"
	vibe := acp("vibe", "Mistral Vibe", "vibe-acp")
	vibe.Auth = AuthCheck{Env: []string{"MISTRAL_API_KEY"}, Files: []string{"~/.vibe/.env"}}
	vibe.InstallHint = "uv tool install mistral-vibe"
	reasonix := acp("reasonix", "DeepSeek Reasonix", "reasonix", "acp")
	reasonix.Fallbacks = []string{"dsnix"}
	reasonix.Models.Fallback = []string{"deepseek-v4-pro", "deepseek-v4-flash"}
	reasonix.Auth = AuthCheck{Env: []string{"DEEPSEEK_API_KEY"}, Files: []string{"~/.reasonix/config.json"}}
	reasonix.InstallHint = "see https://github.com/esengine/DeepSeek-Reasonix"
	vela := acp("vela", "Vela (AMR)", "vela", "agent", "run", "--runtime", "opencode")
	vela.Auth = AuthCheck{Env: []string{"VELA_RUNTIME_KEY"}}
	vela.InstallHint = "install the vela CLI and set VELA_RUNTIME_KEY and VELA_LINK_URL"
	trae := acp("trae", "Trae CLI", "traecli", "acp", "serve", "--yolo")
	trae.Version.Timeout = 10 * time.Second
	trae.InstallHint = "see https://docs.trae.ai/cli"
	trae.Auth.Note = "login is kept by traecli itself; not checked"

	pi := Definition{
		ID: "pi", Name: "Pi", Executable: "pi",
		VerifiedVersions: []string{"0.73.1"},
		// "provider/id" or a pattern, listed live over RPC (get_available_models).
		Models: Models{FreeForm: true},
		// pi's --thinking levels (pi.Efforts).
		Efforts: []string{"off", "minimal", "low", "medium", "high", "xhigh"},
		Args:    ArgSpec{Base: []string{"--mode", "rpc"}},
		Prompt:  DeliverProtocol, Format: FormatPiRPC, Resume: ResumeProtocol, NativeFork: true,
		Caps:   Capabilities{Images: true, Effort: true},
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Env:   []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"},
			Files: []string{"~/.pi/agent/auth.json", "~/.pi/agent/models.json"},
		},
		InstallHint: "npm install -g @mariozechner/pi-coding-agent",
		Docs:        "https://github.com/badlogic/pi-mono",
	}

	antigravity := plainCLI("antigravity", "Antigravity CLI", "agy")
	antigravity.Args = ArgSpec{Base: []string{"--print"}, Model: "--model", Resume: "--resume"}
	antigravity.Prompt, antigravity.PromptFallback = DeliverArgv, ""
	antigravity.Resume = ResumeSnapshot
	antigravity.Models.Fallback = []string{"gemini-2.5-pro", "gemini-2.5-flash", "claude-sonnet-4"}
	antigravity.Auth.Note = "the login lives in the system keyring; not checked (a run reports sign-in failures)"
	antigravity.InstallHint = "see https://antigravity.google"

	aider := plainCLI("aider", "Aider", "aider")
	aider.Args = ArgSpec{
		Base:  []string{"--yes-always", "--no-pretty", "--no-git", "--no-auto-commits", "--no-suggest-shell-commands", "--no-show-model-warnings"},
		Model: "--model", Prompt: "--message", PromptFile: "--message-file",
	}
	aider.Prompt, aider.PromptFallback = DeliverArgv, DeliverFile
	aider.Models.Fallback = []string{"sonnet", "gpt-4o", "deepseek/deepseek-chat"}
	aider.Auth = AuthCheck{Env: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY"}, Files: []string{"~/.aider.conf.yml", "~/.env"}}
	aider.InstallHint = "python -m pip install aider-install && aider-install"
	aider.Docs = "https://aider.chat/docs/install.html"

	grok := plainCLI("grok", "Grok Build", "grok")
	grok.Args = ArgSpec{Prompt: "-p", Model: "--model", Effort: "--effort"}
	grok.Prompt, grok.PromptFallback = DeliverArgv, ""
	grok.Caps.Effort = true
	grok.Models = Models{ // `grok models` is the closed list
		Command:  &ModelCommand{Args: []string{"models"}},
		Fallback: []string{"grok-build", "grok-4.3", "grok-4.20-reasoning"},
	}
	grok.Auth = AuthCheck{Env: []string{"XAI_API_KEY"}, Files: []string{"~/.grok/auth.json"}}
	grok.InstallHint = "curl -fsSL https://x.ai/cli/install.sh | bash"
	grok.Docs = "https://x.ai/cli"

	deepseek := plainCLI("deepseek", "DeepSeek TUI", "deepseek")
	deepseek.Fallbacks = []string{"codewhale"}
	deepseek.Args = ArgSpec{Base: []string{"exec", "--auto"}, Model: "--model"}
	deepseek.Prompt, deepseek.PromptFallback = DeliverArgv, ""
	deepseek.Models.Fallback = []string{"deepseek-v4-pro", "deepseek-flash"}
	deepseek.Auth = AuthCheck{Env: []string{"DEEPSEEK_API_KEY"}, Files: []string{"~/.deepseek/config.toml"}}
	deepseek.InstallHint = "install DeepSeek TUI (the `deepseek` dispatcher, also shipped as `codewhale`)"

	atomcode := plainCLI("atomcode", "AtomCode CLI", "atomcode")
	atomcode.Args = ArgSpec{Base: []string{"-y"}, Model: "--model", PromptFile: "--prompt-file"}
	atomcode.Prompt = DeliverFile
	atomcode.Models.Fallback = []string{"claude-sonnet-4-6", "gpt-5.2", "glm-5.2", "deepseek-v4"}
	atomcode.Auth = AuthCheck{Files: []string{"~/.atomcode/config.toml"}}
	atomcode.InstallHint = "npm install -g @atomgit.com/atomcode"
	atomcode.Docs = "https://atomcode.atomgit.com/docs/en/headless-daemon.html"

	cursor := Definition{
		ID: "cursor-agent", Name: "Cursor Agent", Executable: "cursor-agent", Fallbacks: []string{"agent"},
		Models: Models{
			Command:  &ModelCommand{Args: []string{"models"}, Parse: ParseCursorModels},
			Fallback: []string{"auto", "sonnet-4", "gpt-5"},
			// `cursor-agent models` is the closed list of the account's models.
		},
		Args: ArgSpec{
			Base:  []string{"--print", "--output-format", "stream-json", "--stream-partial-output", "--force", "--trust"},
			Model: "--model", Resume: "--resume",
		},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectCursorAgent, Resume: ResumeCLIFlag,
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Env:   []string{"CURSOR_API_KEY"},
			Files: []string{"~/.config/cursor/auth.json", "~/.cursor/cli-config.json"},
		},
		InstallHint: "curl https://cursor.com/install -fsS | bash",
		Docs:        "https://cursor.com/docs/cli/reference/output-format",
	}
	copilot := Definition{
		ID: "copilot", Name: "GitHub Copilot CLI", Executable: "copilot",
		// BYOK providers take their own model ids (COPILOT_MODEL).
		Models: Models{Fallback: []string{"claude-sonnet-4.6", "gpt-5.2"}, FreeForm: true},
		Args: ArgSpec{
			Base:  []string{"--allow-all-tools", "--output-format", "json"},
			Model: "--model", Resume: "--resume",
		},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectCopilot, Resume: ResumeCLIFlag,
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Env:   []string{"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
			Files: []string{"~/.copilot/config.json"},
			Note:  "the OAuth token may live in the system keyring",
		},
		InstallHint: "npm install -g @github/copilot",
		Docs:        "https://docs.github.com/en/copilot/how-tos/use-copilot-agents/use-copilot-cli",
	}
	qoder := Definition{
		ID: "qoder", Name: "Qoder CLI", Executable: "qodercli",
		// Qoder's model tiers: a closed list.
		Models: Models{Fallback: []string{"auto", "lite", "efficient", "performance", "ultimate"}},
		Args: ArgSpec{
			Base:  []string{"-p", "--output-format", "stream-json", "--yolo"},
			Model: "--model", Resume: "-r",
		},
		Prompt: DeliverStdin, Format: FormatJSONEvents, Dialect: DialectQoder, Resume: ResumeCLIFlag,
		Skills: SkillsInstructions,
		Auth: AuthCheck{
			Env:   []string{"QODER_PERSONAL_ACCESS_TOKEN"},
			Files: []string{"~/.qoder/.auth/user", "~/.qoder.json"},
		},
		InstallHint: "npm install -g @qoder-ai/qodercli, then qodercli login",
		Docs:        "https://docs.qoder.com/cli",
	}
	amp := claude.clone()
	amp.ID, amp.Name, amp.Executable = "amp", "Amp", "amp"
	amp.VerifiedVersions = nil
	amp.Args = ArgSpec{Base: []string{"--execute", "--stream-json", "--stream-json-input"}}
	amp.Resume, amp.NativeFork = ResumeNone, false
	amp.Caps = Capabilities{Images: true}
	amp.Models, amp.Efforts = Models{}, nil // amp has no model or effort option
	amp.Auth = AuthCheck{Env: []string{"AMP_API_KEY"}, Files: []string{"~/.local/share/amp/secrets.json"}}
	amp.InstallHint = "npm install -g @sourcegraph/amp"
	amp.Docs = "https://ampcode.com/manual"
	codebuddy := claude.clone()
	codebuddy.ID, codebuddy.Name, codebuddy.Executable = "codebuddy", "CodeBuddy Code", "codebuddy"
	codebuddy.VerifiedVersions = nil
	codebuddy.Models, codebuddy.Efforts = Models{FreeForm: true}, nil
	codebuddy.Caps.Effort = false
	codebuddy.Auth = AuthCheck{Env: []string{"CODEBUDDY_API_KEY"}, Files: []string{"~/.codebuddy/.credentials.json"}}
	codebuddy.InstallHint = "npm install -g @tencent-ai/codebuddy-code"
	codebuddy.Docs = "https://www.codebuddy.ai/cli"

	return []Definition{
		claude, codex, minimax, opencodeACP(opencode), opencodeRun, gemini, qwen, kimi, kiro, kilo, devin, hermes, vibe,
		reasonix, vela, trae, pi, antigravity, aider, grok, deepseek, atomcode, cursor, mimo,
		copilot, qoder, amp, codebuddy,
	}
}

// Builtins returns every built-in definition sorted by id. The slice and its
// definitions are fresh copies.
func Builtins() []Definition {
	defs := builtins()
	sort.Slice(defs, func(i, j int) bool { return defs[i].ID < defs[j].ID })
	return defs
}

// BuiltinIDs returns the built-in ids, sorted.
func BuiltinIDs() []string {
	defs := Builtins()
	ids := make([]string, len(defs))
	for i, d := range defs {
		ids[i] = d.ID
	}
	return ids
}

// Lookup returns the built-in with id.
func Lookup(id string) (Definition, bool) {
	for _, d := range builtins() {
		if d.ID == id {
			return d, true
		}
	}
	return Definition{}, false
}

// ParseLines returns one model id per non-empty line, skipping comments,
// headers ending in ':' and lines with spaces or control characters;
// duplicates are dropped.
func ParseLines(stdout string) []string {
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasSuffix(l, ":") || strings.ContainsFunc(l, notIDRune) || seen[l] {
			continue
		}
		seen[l] = true
		out = append(out, l)
	}
	return out
}

// notIDRune reports runes a model id never holds: spaces and controls.
func notIDRune(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }

var slashModel = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._/:@-]*$`)

// ParseSlashModels keeps lines shaped provider/model (OpenCode, MiMo).
func ParseSlashModels(stdout string) []string {
	var out []string
	for _, id := range ParseLines(stdout) {
		if slashModel.MatchString(id) {
			out = append(out, id)
		}
	}
	return out
}

var cursorModel = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9._/:@-]*)(?:\s+-\s+.+)?$`)

// ParseCursorModels reads `cursor-agent models` ("id - Label" lines). "No
// models available" yields nothing.
func ParseCursorModels(stdout string) []string {
	if strings.Contains(strings.ToLower(stdout), "no models available") {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, l := range strings.Split(stdout, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.EqualFold(l, "available models") || strings.EqualFold(l, "models") {
			continue
		}
		m := cursorModel.FindStringSubmatch(l)
		if m == nil || seen[m[1]] {
			continue
		}
		seen[m[1]] = true
		out = append(out, m[1])
	}
	return out
}

// opencodeACP is OpenCode over ACP, sharing the executable, versions, models and
// auth check of its print-mode definition.
func opencodeACP(run Definition) Definition {
	d := acp("opencode", "OpenCode", run.Executable, "acp")
	d.Fallbacks, d.VerifiedVersions, d.Models, d.Auth = run.Fallbacks, run.VerifiedVersions, run.Models, run.Auth
	d.InstallHint, d.Docs, d.NativeFork = run.InstallHint, "https://opencode.ai/docs/acp/", false
	return d
}
