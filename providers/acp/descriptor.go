// Descriptors: the ACP agent CLIs, as the registry detects them and a run
// launches them. Definition (definition.go) adds what only this provider
// reads: environment, approval-policy arguments, session errors, wiring.

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

// opencodeDescriptor is `opencode acp`; it shares the executable, versions,
// models and sign-in files of OpenCode's run mode. OpenCode over ACP does not
// fork.
func opencodeDescriptor() registry.Definition {
	run, _ := jsonstream.Descriptor(jsonstream.OpenCode)
	d := shape("opencode", "OpenCode", run.Executable, "acp")
	d.Fallbacks, d.VerifiedVersions, d.Models, d.Auth = run.Fallbacks, run.VerifiedVersions, run.Models, run.Auth
	d.PassEnv = append([]string(nil), run.PassEnv...)
	d.InstallHint, d.Docs = run.InstallHint, "https://opencode.ai/docs/acp/"
	return d
}

// geminiDescriptor is `gemini --acp`. It does not resume: see Gemini.
func geminiDescriptor() registry.Definition {
	d := shape("gemini", "Gemini CLI", "gemini", "--acp")
	d.Resume = registry.ResumeNone
	d.VerifiedVersions = []string{"0.61.0"}
	d.Models.Fallback = []string{"gemini-2.5-pro", "gemini-2.5-flash"}
	d.PassEnv = []string{"GOOGLE_GEMINI_BASE_URL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS"},
		Files: []string{"~/.gemini/oauth_creds.json"},
	}
	d.InstallHint = "npm install -g @google/gemini-cli"
	d.Docs = "https://github.com/google-gemini/gemini-cli"
	return d
}

// qwenDescriptor is `qwen --acp`.
func qwenDescriptor() registry.Definition {
	d := shape("qwen", "Qwen Code", "qwen", "--acp")
	d.VerifiedVersions = []string{"0.24.4"}
	d.Models.Fallback = []string{"qwen3-coder-plus", "qwen3-coder-flash"}
	d.PassEnv = []string{"OPENAI_BASE_URL", "OPENAI_MODEL"}
	d.Auth = registry.AuthCheck{
		Env:   []string{"OPENAI_API_KEY", "DASHSCOPE_API_KEY"},
		Files: []string{"~/.qwen/oauth_creds.json"},
	}
	d.InstallHint = "npm install -g @qwen-code/qwen-code"
	d.Docs = "https://github.com/QwenLM/qwen-code"
	return d
}

// kiroDescriptor is `kiro-cli acp`.
func kiroDescriptor() registry.Definition {
	d := shape("kiro", "Kiro CLI", "kiro-cli", "acp")
	d.InstallHint = "curl -fsSL https://cli.kiro.dev/install | bash"
	d.Auth.Note = "login is kept by kiro-cli itself; not checked"
	return d
}

// kiloDescriptor is `kilo acp` (also installed as kilocode).
func kiloDescriptor() registry.Definition {
	d := shape("kilo", "Kilo", "kilo", "acp")
	d.Fallbacks = []string{"kilocode"}
	d.InstallHint = "npm install -g @kilocode/cli"
	d.Auth.Note = "login is kept by kilo itself; not checked"
	return d
}

// devinDescriptor is `devin acp`. OpenDesign adds --permission-mode
// dangerous; Threadline keeps the permission prompts.
func devinDescriptor() registry.Definition {
	d := shape("devin", "Devin for Terminal", "devin", "acp")
	d.Models.Fallback = []string{"adaptive", "swe", "opus", "sonnet"}
	d.InstallHint = "see https://cli.devin.ai/docs"
	d.Auth.Note = "login is kept by devin itself; not checked"
	return d
}

// hermesDescriptor is `hermes acp`.
func hermesDescriptor() registry.Definition {
	d := shape("hermes", "Hermes Agent", "hermes", "acp")
	d.Auth = registry.AuthCheck{Env: []string{"XAI_API_KEY", "OPENAI_API_KEY"}, Files: []string{"~/.hermes/.env", "~/.hermes/auth.json"}}
	d.InstallHint = "see https://github.com/NousResearch/hermes-agent"
	return d
}

// vibeDescriptor is `vibe-acp`.
func vibeDescriptor() registry.Definition {
	d := shape("vibe", "Mistral Vibe", "vibe-acp")
	d.Auth = registry.AuthCheck{Env: []string{"MISTRAL_API_KEY"}, Files: []string{"~/.vibe/.env"}}
	d.InstallHint = "uv tool install mistral-vibe"
	return d
}

// reasonixDescriptor is `reasonix acp` (also installed as dsnix).
func reasonixDescriptor() registry.Definition {
	d := shape("reasonix", "DeepSeek Reasonix", "reasonix", "acp")
	d.Fallbacks = []string{"dsnix"}
	d.Models.Fallback = []string{"deepseek-v4-pro", "deepseek-v4-flash"}
	d.Auth = registry.AuthCheck{Env: []string{"DEEPSEEK_API_KEY"}, Files: []string{"~/.reasonix/config.json"}}
	d.InstallHint = "see https://github.com/esengine/DeepSeek-Reasonix"
	return d
}

// velaDescriptor is `vela agent run --runtime opencode` (AMR).
func velaDescriptor() registry.Definition {
	d := shape("vela", "Vela (AMR)", "vela", "agent", "run", "--runtime", "opencode")
	d.PassEnv = []string{"VELA_LINK_URL"}
	d.Auth = registry.AuthCheck{Env: []string{"VELA_RUNTIME_KEY"}}
	d.InstallHint = "install the vela CLI and set VELA_RUNTIME_KEY and VELA_LINK_URL"
	return d
}

// traeDescriptor is `traecli acp serve`. OpenDesign adds --yolo; Threadline
// keeps the permission prompts.
func traeDescriptor() registry.Definition {
	d := shape("trae", "Trae CLI", "traecli", "acp", "serve")
	d.Version.Timeout = 10 * time.Second
	d.InstallHint = "see https://docs.trae.ai/cli"
	d.Auth.Note = "login is kept by traecli itself; not checked"
	return d
}
