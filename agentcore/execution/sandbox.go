// Sandboxed host runs: each chat's run confined with Landlock to its own
// workspace and agent state (host.isolation: sandbox).

package execution

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

// AgentState is what sandboxing needs of one agent CLI: where it keeps its
// state (registry.Definition.State), its sign-in files (Auth.Files, copied
// as shared files) and the TCP ports the operator added
// (agents.<id>.sandbox.connect).
type AgentState struct {
	Spec    registry.StateSpec
	Auth    []string
	Connect []uint16
}

// Sandboxing confines host runs (package sandbox). Each run may write only
// its working directory and its chat's agent state (StateRoot/<chat id>:
// its HOME and TMPDIR), read the system, the CLI's installation and the
// shared files it needs, connect over TCP only to 443, 80 and the ports of
// its endpoints, and reach no process, abstract socket or file of the bot or
// of another chat.
type Sandboxing struct {
	// Helper starts the sandbox helper (the bot's executable and
	// "sandbox"); Helper[0] is absolute.
	Helper []string
	// StateRoot holds one state directory per chat.
	StateRoot string
	// Forbidden are the bot's own paths (database files, config, state and
	// relays): no policy may grant them, a directory above or below them.
	Forbidden []string
	// Agents are the agents' state facts by provider id.
	Agents map[agent.ProviderID]AgentState
	// SharedHome is the home shared files are copied from when neither the
	// agent's env sets HOME nor the run is isolated (then the agent user's
	// home is): the bot user's own home.
	SharedHome string
}

// ProbeKey is the state key of detection's runs (version probes, model
// discovery): an agent's probes get a home of their own, as a chat does.
const ProbeKey = "probe"

// Confine readies a run of provider's CLI with env in cwd under key
// (a chat id, or ProbeKey plus the agent id): the chat's agent state and
// the run's environment (env with HOME, TMPDIR, the XDG directories and the
// CLI's state switches moved into it) and the sandbox the start goes
// through.
func (s *Sandboxing) Confine(provider agent.ProviderID, key, cwd string, env map[string]string, iso *procrun.Isolation) (map[string]string, *procrun.Sandbox, error) {
	facts := s.Agents[provider]
	shared := s.SharedHome
	if iso != nil {
		shared = iso.Home
	}
	st, err := PrepareState(s.StateRoot, key, facts.Spec, facts.Auth, env, shared, iso)
	if err != nil {
		return nil, nil, err
	}
	runEnv := maps.Clone(env)
	if runEnv == nil {
		runEnv = map[string]string{}
	}
	maps.Copy(runEnv, st.Env)
	p, err := s.policy(cwd, st, runEnv, facts.Connect, facts.Spec.Connect)
	if err != nil {
		return nil, nil, err
	}
	return runEnv, &procrun.Sandbox{Helper: s.Helper, Policy: p}, nil
}

// policy is the Landlock policy of a run in cwd with state st.
func (s *Sandboxing) policy(cwd string, st ChatState, env map[string]string, connect ...[]uint16) (sandbox.Policy, error) {
	p := sandbox.Policy{
		Devices:   sandbox.SystemDevices(),
		Terminals: sandbox.SystemTerminals(),
		Scope:     true,
		Forbidden: s.Forbidden,
	}
	for _, d := range []string{cwd, st.Dir} {
		if d == "" {
			continue
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return p, fmt.Errorf("sandbox: %w", err)
		}
		p.ReadWrite = append(p.ReadWrite, real)
	}
	ro, err := sandbox.Exclude(sandbox.SystemReadOnly(), s.Forbidden)
	if err != nil {
		return p, err
	}
	p.ReadOnly = append(ro, st.Outside...)
	ports := sandbox.DefaultConnectTCP()
	for _, c := range connect {
		ports = append(ports, c...)
	}
	for _, v := range env {
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
			ports = append(ports, sandbox.PortsOf(v)...)
		}
	}
	slices.Sort(ports)
	p.ConnectTCP = slices.Compact(ports)
	if err := sandbox.Overlaps(p, s.Forbidden); err != nil {
		return p, err
	}
	return p, nil
}

// confine is Confine for a provider's run: a chat's state is keyed by its
// id, a run without one (a probe) by ProbeKey and the provider.
func (s *Sandboxing) confine(ctx context.Context, provider agent.ProviderID, req agent.RunRequest, iso *procrun.Isolation) (context.Context, agent.RunRequest, error) {
	key := req.ChatID
	if key == "" {
		key = ProbeKey + "-" + string(provider)
	}
	env, sb, err := s.Confine(provider, key, req.Cwd, req.Env, iso)
	if err != nil {
		return ctx, req, err
	}
	req.Env = env
	return procrun.WithSandbox(ctx, sb), req, nil
}
