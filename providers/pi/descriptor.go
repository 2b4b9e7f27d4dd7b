// Descriptor: pi in RPC mode, as the registry detects it and a run launches it.

package pi

import "github.com/threadline-bot/threadline/agentcore/registry"

// Descriptor describes pi: the command line Args builds (--session to
// resume, --fork to branch, --model and --thinking as separate values), the
// prompt as an RPC command.
func Descriptor() registry.Definition {
	return registry.Definition{
		ID: string(ProviderID), Name: "Pi", Executable: DefaultBin,
		VerifiedVersions: append([]string(nil), VerifiedWith...),
		Verified:         registry.RealCLI("providers/pi TestE2ETool, TestE2EAbort, TestE2EResume"),
		// "provider/id" or a pattern, listed live over RPC (get_available_models).
		Models:  registry.Models{FreeForm: true},
		Efforts: append([]string(nil), Efforts...),
		Args: registry.ArgSpec{
			Base:  []string{"--mode", "rpc"},
			Model: "--model", Effort: "--thinking", Resume: "--session", Fork: "--fork",
		},
		Prompt: registry.DeliverProtocol, Format: registry.FormatPiRPC, Resume: registry.ResumeCLIFlag, NativeFork: true,
		Caps:    registry.Capabilities{Images: true, Effort: true},
		Skills:  registry.SkillsInstructions,
		PassEnv: []string{"PI_CODING_AGENT_DIR"},
		Auth: registry.AuthCheck{
			Env:   []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "OPENROUTER_API_KEY", "GROQ_API_KEY", "XAI_API_KEY", "MISTRAL_API_KEY"},
			Files: []string{"~/.pi/agent/auth.json", "~/.pi/agent/models.json"},
		},
		State:       registry.StateSpec{Env: map[string]string{"PI_CODING_AGENT_DIR": ".pi/agent"}, Shared: []string{"${PI_CODING_AGENT_DIR}/settings.json"}},
		InstallHint: installHint,
		Docs:        "https://github.com/badlogic/pi-mono",
	}
}
