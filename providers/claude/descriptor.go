// Descriptors: Claude Code, and the CLIs that speak its stream-json format
// (Amp, CodeBuddy), as the registry detects them and a run launches them.

package claude

import "github.com/threadline-bot/threadline/agentcore/registry"

// VerifiedVersions are the Claude Code versions this adapter was verified
// with (the reference captures and the end-to-end tests).
var VerifiedVersions = []string{"2.1.328"}

// ClaudeState is where Claude Code keeps its state (sessions, transcripts,
// .claude.json): CLAUDE_CONFIG_DIR, per chat in a sandboxed run. The
// credentials come with Auth.Files.
var ClaudeState = registry.StateSpec{Env: map[string]string{"CLAUDE_CONFIG_DIR": ".claude"}}

// Efforts are the levels --effort takes.
var Efforts = []string{"low", "medium", "high", "xhigh", "max"}

// Descriptor describes Claude Code: the command line Args builds, the prompt
// as a stream-json user message (PromptLine), resume by --resume and native
// fork by --fork-session.
func Descriptor() registry.Definition {
	return registry.Definition{
		ID: string(ProviderID), Name: "Claude Code", Executable: DefaultBin,
		VerifiedVersions: append([]string(nil), VerifiedVersions...),
		Verified:         registry.RealCLI("providers/claude TestE2EBashToolRoundTrip, TestE2ECancelMidStream, TestE2EResume"),
		// Aliases or full model ids (claude-sonnet-4-5-20250929).
		Models:  registry.Models{Fallback: []string{"sonnet", "opus", "haiku"}, FreeForm: true},
		Efforts: append([]string(nil), Efforts...),
		Args: registry.ArgSpec{
			Base:  []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--include-partial-messages"},
			Model: "--model", Effort: "--effort", Resume: "--resume", Fork: "--fork-session",
		},
		Prompt: registry.DeliverProtocol, Format: registry.FormatClaudeStreamJSON, Resume: registry.ResumeCLIFlag, NativeFork: true,
		Caps:   registry.Capabilities{Interactions: true, Images: true, Effort: true, Plan: true},
		Skills: registry.SkillsSlash,
		// The endpoint and config directory; with Auth.Env they pass from the
		// host environment to this agent.
		PassEnv: []string{"ANTHROPIC_BASE_URL", "CLAUDE_CONFIG_DIR"},
		Auth: registry.AuthCheck{
			Env:   []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"},
			Files: []string{"${CLAUDE_CONFIG_DIR}/.credentials.json", "~/.claude/.credentials.json"},
			Note:  "on macOS the login lives in the keychain and is not checked",
			Login: "claude /login",
		},
		// A sandboxed run keeps its sessions and transcripts per chat.
		State:       ClaudeState,
		InstallHint: installHint,
		Docs:        "https://docs.anthropic.com/en/docs/claude-code",
	}
}

// AmpDescriptor describes Amp (`amp --execute --stream-json`). It is
// detected only: no provider here was verified against its stream.
func AmpDescriptor() registry.Definition {
	d := Descriptor()
	d.ID, d.Name, d.Executable = "amp", "Amp", "amp"
	d.VerifiedVersions = nil
	d.Verified = registry.DocsOnly("amp needs Sourcegraph's Amp server even with AMP_URL set (getUserInfo, loadPlugins before any model call): it cannot run offline, and no provider here was checked against its stream")
	d.Args = registry.ArgSpec{Base: []string{"--execute", "--stream-json", "--stream-json-input"}}
	d.Resume, d.NativeFork = registry.ResumeNone, false
	d.Caps = registry.Capabilities{Images: true}
	d.Models, d.Efforts = registry.Models{}, nil // amp has no model or effort option
	d.PassEnv = []string{"AMP_URL"}
	d.Auth = registry.AuthCheck{Env: []string{"AMP_API_KEY"}, Files: []string{"~/.local/share/amp/secrets.json"}}
	d.InstallHint = "npm install -g @sourcegraph/amp"
	d.Docs = "https://ampcode.com/manual"
	return d
}

// CodeBuddyDescriptor describes CodeBuddy Code (Claude Code's command line
// and stream). It is detected only: no provider here was verified against it.
func CodeBuddyDescriptor() registry.Definition {
	d := Descriptor()
	d.ID, d.Name, d.Executable = "codebuddy", "CodeBuddy Code", "codebuddy"
	d.VerifiedVersions = nil
	d.Verified = registry.DocsOnly("@tencent-ai/codebuddy-code is not served by the npm registry reachable here; no provider here was checked against its stream")
	d.Models, d.Efforts = registry.Models{FreeForm: true}, nil
	d.Args.Effort = ""
	d.Caps.Effort = false
	d.PassEnv = nil
	d.Auth = registry.AuthCheck{Env: []string{"CODEBUDDY_API_KEY"}, Files: []string{"~/.codebuddy/.credentials.json"}}
	d.InstallHint = "npm install -g @tencent-ai/codebuddy-code"
	d.Docs = "https://www.codebuddy.ai/cli"
	return d
}
