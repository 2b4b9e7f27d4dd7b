// Descriptor: Kimi Code CLI in print mode, as the registry detects it and a
// run launches it.

package kimi

import "github.com/threadline-bot/threadline/agentcore/registry"

// Descriptor describes Kimi: the command line Command builds (-p PROMPT, or
// the prompt as a stream-json message on stdin when it does not fit),
// --model, --session to resume, no fork.
func Descriptor() registry.Definition {
	return registry.Definition{
		ID: string(ProviderID), Name: "Kimi Code CLI", Executable: DefaultBin,
		Verified: registry.Fixtures("providers/kimi TestGolden",
			"Kimi Code CLI is in no registry reachable here (PyPI holds only the archived legacy kimi-cli)"),
		Models: registry.Models{Fallback: []string{"kimi-k2-turbo-preview", "kimi-k2.5", "moonshot-v1-32k"}, FreeForm: true},
		Args: registry.ArgSpec{
			Base: []string{"--output-format", "stream-json"}, Prompt: "-p",
			Model: "--model", Resume: "--session",
		},
		Prompt: registry.DeliverArgv, PromptFallback: registry.DeliverStdin,
		Format: registry.FormatKimiStreamJSON, Resume: registry.ResumeCLIFlag,
		Skills:  registry.SkillsInstructions,
		PassEnv: []string{"KIMI_BASE_URL", "KIMI_CODE_HOME"},
		Auth: registry.AuthCheck{
			Env:   []string{"KIMI_API_KEY", "MOONSHOT_API_KEY"},
			Files: []string{"${KIMI_CODE_HOME}/config.toml", "~/.kimi-code/config.toml", "~/.kimi/config.toml", "~/.kimi/credentials"},
			Note:  "a config file shows the CLI was set up; whether its login is still valid is not checked",
		},
		State:       registry.StateSpec{Env: map[string]string{"KIMI_CODE_HOME": ".kimi-code"}},
		InstallHint: installHint,
		Docs:        "https://moonshotai.github.io/kimi-cli/",
	}
}
