// Sandboxed host runs: each chat's run confined with Landlock to its own
// workspace and agent state (host.isolation: sandbox).

package execution

import (
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
	"golang.org/x/sys/unix"
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
	// Tools are executables of the bot's own every run may read and run
	// (threadline-mcp, which its CLI starts), wherever they are installed.
	Tools []string
}

// ProbeKey is the state key of detection's runs (version probes, model
// discovery): an agent's probes get a home of their own, as a chat does.
const ProbeKey = "probe"

// Confined is a run readied for the sandbox (Sandboxing.Confine).
type Confined struct {
	// Env is the run's environment: the agent's with HOME, TMPDIR, the XDG
	// directories and the CLI's state switches moved into the chat's state.
	Env map[string]string
	// Sandbox is what the start goes through (procrun.WithSandbox).
	Sandbox *procrun.Sandbox
	// Port is the run's own loopback port (agent.RunRequest.LocalPort): it
	// may listen and connect on it.
	Port int
}

// Confine readies a run of provider's CLI with env in cwd under key
// (a chat id, or ProbeKey plus the agent id): the chat's agent state, the
// run's environment and port, and the sandbox the start goes through.
//
// TCP: the run may bind ports the kernel picks (port 0) and its own port,
// and connect to 443, 80, its endpoints' ports, the configured ones and its
// own port; nothing else, so neither a local database nor another chat's
// servers (on ports the kernel picked) are reachable. A server an agent's
// tool starts on a port the kernel picks is unreachable to it too (Landlock
// rules are by port): its own port is the one it can use.
func (s *Sandboxing) Confine(provider agent.ProviderID, key, cwd string, readOnly []string, env map[string]string, iso *procrun.Isolation) (Confined, error) {
	facts := s.Agents[provider]
	shared := s.SharedHome
	if iso != nil {
		shared = iso.Home
	}
	st, err := PrepareState(s.StateRoot, key, facts.Spec, facts.Auth, env, shared, iso)
	if err != nil {
		return Confined{}, err
	}
	c := Confined{Env: maps.Clone(env)}
	if c.Env == nil {
		c.Env = map[string]string{}
	}
	maps.Copy(c.Env, st.Env)
	if c.Port, err = freePort(); err != nil {
		return Confined{}, fmt.Errorf("sandbox: a port of the run's own: %w", err)
	}
	own := []uint16{uint16(c.Port)}
	p, err := s.policy(cwd, st, c.Env, facts.Connect, facts.Spec.Connect, own)
	if err != nil {
		return Confined{}, err
	}
	p.ReadOnly = append(p.ReadOnly, readOnly...)
	if err := sandbox.Overlaps(p, s.Forbidden); err != nil {
		return Confined{}, err
	}
	p.BindTCP = []uint16{0, uint16(c.Port)}
	c.Sandbox = &procrun.Sandbox{Helper: s.Helper, Policy: p}
	return c, nil
}

// forkedMark marks a fork's state home that has its parent's copied in.
const forkedMark = ".threadline-forked"

// forkState gives a fork's first run its parent chat's agent state (the
// CLI's sessions and transcripts, where the native fork finds the parent's
// session), copied once as the agent into the fork's home; the parent's
// is not changed. A parent without state gives nothing.
func (s *Sandboxing) forkState(ctx context.Context, parent, fork string, iso *procrun.Isolation) error {
	from := filepath.Join(s.StateRoot, parent, stateHome)
	to := filepath.Join(s.StateRoot, fork, stateHome)
	if _, err := os.Lstat(filepath.Join(to, forkedMark)); err == nil {
		return nil
	}
	if _, err := os.Stat(from); err != nil {
		return nil
	}
	if err := (Workspaces{Iso: iso, Sandbox: s}).copyAsAgent(ctx, from, to); err != nil {
		return err
	}
	home, err := openDirNoFollow(to)
	if err != nil {
		return err
	}
	defer home.Close()
	fd, err := unix.Openat(int(home.Fd()), forkedMark, unix.O_WRONLY|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	return unix.Close(fd)
}

// freePort is a loopback TCP port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
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
	p.ReadOnly = append(append(ro, st.Outside...), s.Tools...)
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
	c, err := s.Confine(provider, key, req.Cwd, req.ReadOnly, req.Env, iso)
	if err != nil {
		return ctx, req, err
	}
	if req.ForkOf != "" && validStateKey(req.ForkOf) {
		if err := s.forkState(ctx, req.ForkOf, key, iso); err != nil {
			return ctx, req, fmt.Errorf("the fork's agent state: %w", err)
		}
	}
	req.Env, req.LocalPort = c.Env, c.Port
	return procrun.WithSandbox(ctx, c.Sandbox), req, nil
}
