// Wiring: the one table of built-in agents (descriptor and provider
// constructor).

package main

import (
	"log/slog"
	"os"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs/agentset"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/jsonstream"
	"github.com/threadline-bot/threadline/providers/kimi"
	"github.com/threadline-bot/threadline/providers/minimax"
	"github.com/threadline-bot/threadline/providers/pi"
	"github.com/threadline-bot/threadline/providers/plain"
)

// builtin is one built-in agent: its descriptor (exported by its provider
// package) and the constructor of the provider that runs it; a nil
// constructor means detected only (no provider here was verified against
// the CLI).
type builtin struct {
	desc registry.Definition
	new  func(log *slog.Logger) (agent.Provider, error)
}

// builtinTable lists every built-in agent. Adding a CLI of an existing family
// is a descriptor in its provider package and one row here.
func builtinTable() []builtin {
	return []builtin{
		{claude.Descriptor(), func(l *slog.Logger) (agent.Provider, error) { return claude.New(l, claude.Options{}), nil }},
		{claude.AmpDescriptor(), nil},
		{claude.CodeBuddyDescriptor(), nil},
		{codex.Descriptor(), func(l *slog.Logger) (agent.Provider, error) { return codex.New(l, codex.Options{}), nil }},
		{minimax.Descriptor(), func(l *slog.Logger) (agent.Provider, error) { return minimax.New(l, minimax.Options{}), nil }},
		{pi.Descriptor(), func(l *slog.Logger) (agent.Provider, error) { return pi.New(l, pi.Options{}), nil }},
		{kimi.Descriptor(), func(l *slog.Logger) (agent.Provider, error) {
			return kimi.New(l, kimi.Options{ArgvLimit: argvLimit()}), nil
		}},
		acpRow(acp.Opencode()), acpRow(acp.Gemini()), acpRow(acp.Qwen()), acpRow(acp.Kiro()), acpRow(acp.Kilo()),
		acpRow(acp.Devin()), acpRow(acp.Hermes()), acpRow(acp.Vibe()), acpRow(acp.Reasonix()), acpRow(acp.Vela()),
		acpRow(acp.Trae()), acpRow(acp.CopilotACP()), acpRow(acp.Droid()), acpRow(acp.CodexACP()),
		acpRow(acp.ClaudeAgentACP()),
		jsonRow(jsonstream.OpenCode), jsonRow(jsonstream.Mimo), jsonRow(jsonstream.Kilo), jsonRow(jsonstream.CursorAgent),
		jsonRow(jsonstream.Copilot), jsonRow(jsonstream.Qoder), jsonRow(jsonstream.GrokCLI),
		plainRow(plain.Antigravity), plainRow(plain.Aider), plainRow(plain.Grok), plainRow(plain.DeepSeek),
		plainRow(plain.AtomCode), plainRow(plain.Continue), plainRow(plain.Crush),
		{plain.JulesDescriptor(), nil},
	}
}

// acpRow is an ACP agent's row.
func acpRow(d acp.Definition) builtin {
	return builtin{d.Descriptor, func(l *slog.Logger) (agent.Provider, error) { return acp.New(d, l, acp.Options{}), nil }}
}

// jsonRow is a JSON-event-stream CLI's row.
func jsonRow(d jsonstream.Dialect) builtin {
	desc, _ := jsonstream.Descriptor(d)
	return builtin{desc, func(l *slog.Logger) (agent.Provider, error) {
		return jsonstream.New(l, jsonstream.Options{Dialect: d, ID: agent.ProviderID(desc.ID), ArgvLimit: argvLimit()})
	}}
}

// plainRow is an unstructured CLI's row.
func plainRow(c plain.CLI) builtin {
	desc, _ := plain.Descriptor(c)
	return builtin{desc, func(l *slog.Logger) (agent.Provider, error) {
		return plain.New(l, plain.Options{CLI: c, ID: agent.ProviderID(desc.ID), ArgvLimit: argvLimit()})
	}}
}

// argvLimit is the longest prompt a provider puts on the command line: the
// platform's budget for one more argument beside this host's environment
// (children get a filtered subset of it), less one byte for the space a
// prompt starting with '-' gets.
func argvLimit() int { return max(1, registry.ArgvBudget(os.Environ(), nil)-1) }

// builtinDefinitions returns the table's descriptors, validated and sorted.
func builtinDefinitions() ([]registry.Definition, error) {
	table := builtinTable()
	descs := make([]registry.Definition, len(table))
	for i, b := range table {
		descs[i] = b.desc
	}
	return registry.Builtins(descs...)
}

// newBuiltinProvider builds the provider of a built-in (agentset.Runner:
// checked, run on the executable detection reports).
func newBuiltinProvider(b builtin, log *slog.Logger) (agent.Provider, error) {
	return agentset.Runner(b.desc, b.new, log)
}
