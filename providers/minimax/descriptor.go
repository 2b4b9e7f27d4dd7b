// Descriptor: MiniMax through the Codex App Server, as the registry detects
// it and a run launches it.

package minimax

import (
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/codex"
)

// Descriptor describes MiniMax: the Codex CLI's descriptor (executable,
// version probe, protocol) with MiniMax's models, key and install hint.
func Descriptor() registry.Definition {
	d := codex.Descriptor()
	d.ID, d.Name = string(ProviderID), "MiniMax (Codex app-server)"
	d.Executable = DefaultBin
	// The real codex CLI (VerifiedVersions from codex) with MiniMax's
	// config, against a scripted Responses server.
	d.Verified = registry.RealCLI("providers/minimax TestE2EMiniMaxConfig")
	d.Models = registry.Models{Fallback: append([]string(nil), DefaultModels...), FreeForm: true}
	d.PassEnv = nil
	d.Auth = registry.AuthCheck{Env: []string{KeyEnv}}
	// A sandboxed run's CODEX_HOME, in its chat's agent state: MiniMax's
	// own, as outside the sandbox, not Codex's; nothing shared is copied
	// into it (the configuration is on the command line).
	d.State = registry.StateSpec{Env: map[string]string{"CODEX_HOME": ".minimax/codex-home"}}
	d.InstallHint = installHint
	d.Docs = "https://platform.minimax.io/docs"
	return d
}
