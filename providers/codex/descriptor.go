// Descriptor: Codex over its App Server, as the registry detects it and a
// run launches it.

package codex

import "github.com/threadline-bot/threadline/agentcore/registry"

// Descriptor describes Codex: `codex app-server`, the prompt, model, effort,
// resume (thread/resume) and fork (thread/fork) all over the protocol.
func Descriptor() registry.Definition {
	return registry.Definition{
		ID: string(ProviderID), Name: "Codex", Executable: DefaultBin,
		VerifiedVersions: append([]string(nil), VerifiedVersions...),
		Verified:         registry.RealCLI("providers/codex TestE2EApprove, TestE2ECancelMidStream, TestE2EResumeInFreshProcess"),
		// `codex --version` prints "codex-cli 0.169.0": the registry's
		// default pattern reads it.
		// The live catalog comes over the protocol (model/list); models of
		// providers configured in config.toml are valid too.
		Models: registry.Models{Fallback: []string{"gpt-5.5", "gpt-5.4", "gpt-5.4-mini"}, FreeForm: true},
		Args:   registry.ArgSpec{Base: []string{"app-server"}},
		Prompt: registry.DeliverProtocol, Format: registry.FormatCodexAppServer, Resume: registry.ResumeProtocol, NativeFork: true,
		Caps:    registry.Capabilities{Interactions: true, Images: true, Effort: true, Plan: true},
		Skills:  registry.SkillsDollar,
		PassEnv: []string{"OPENAI_BASE_URL", "CODEX_HOME"},
		Auth: registry.AuthCheck{
			Env:   []string{"OPENAI_API_KEY", "CODEX_API_KEY"},
			Files: []string{"${CODEX_HOME}/auth.json", "~/.codex/auth.json"},
			Login: "codex login",
		},
		State:       registry.StateSpec{Env: map[string]string{"CODEX_HOME": ".codex"}, Shared: []string{"${CODEX_HOME}/config.toml"}},
		InstallHint: installHint,
		Docs:        "https://developers.openai.com/codex/cli",
	}
}
