// The built-in definitions as a list, for tests that cover each of them.

package acp

import "github.com/threadline-bot/threadline/agentcore/agent"

// definitions returns the built-in ACP definitions: opencode, gemini, qwen,
// kilo, copilot-acp, droid, codex-acp and claude-agent-acp (verified here
// against the pinned CLIs), and kiro, devin, hermes, vibe, reasonix, vela
// and trae (launch syntax from their docs and OpenDesign's adapters; not
// verified here). The wiring in cmd/threadline lists the same constructors.
func definitions() []Definition {
	return []Definition{
		Opencode(), Gemini(), Qwen(), Kilo(), CopilotACP(), Droid(), CodexACP(), ClaudeAgentACP(),
		Kiro(), Devin(), Hermes(), Vibe(), Reasonix(), Vela(), Trae(),
	}
}

// lookup returns the built-in definition with this id.
func lookup(id agent.ProviderID) (Definition, bool) {
	for _, d := range definitions() {
		if d.ID == id {
			return d, true
		}
	}
	return Definition{}, false
}
