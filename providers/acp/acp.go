// Provider: runs one turn of an ACP agent CLI over JSON-RPC on stdio.

package acp

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Defaults.
const (
	DefaultInterruptTimeout = 5 * time.Second
	DefaultStartTimeout     = 60 * time.Second
)

// ClientInfo is what the client says about itself at initialize.
var ClientInfo = Implementation{Name: "threadline", Title: "Threadline", Version: "0.1.0"}

// Options configures a Provider.
type Options struct {
	// Launch: Bin overrides Definition.Bin (RunRequest.Bin overrides both);
	// Env is extra environment for every run (above Definition.Env, below
	// RunRequest.Env); StopGrace is how long a cancelled run waits for the
	// agent to answer session/prompt after session/cancel, and a finished run
	// for the agent to exit after stdin closed, before the kill (default 5 s).
	procrun.Launch
	// StartTimeout bounds initialize and the session setup; default 60 s.
	StartTimeout time.Duration
}

// Provider runs one ACP agent CLI described by a Definition.
type Provider struct {
	def    Definition
	logger *slog.Logger
	opts   Options
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider for def. A nil logger discards logs.
func New(def Definition, logger *slog.Logger, opts Options) *Provider {
	opts.Launch = opts.Launch.WithDefaults(def.Bin, DefaultInterruptTimeout)
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	return &Provider{def: def, logger: procrun.ProviderLogger(logger, def.ID), opts: opts}
}

// ID returns the definition's id.
func (p *Provider) ID() agent.ProviderID { return p.def.ID }

// Definition returns the provider's definition.
func (p *Provider) Definition() Definition { return p.def }

// LaunchArgs returns the CLI arguments for req (without the executable):
// Definition.Args, the policy arguments, then the operator's RunRequest.Args.
func (d Definition) LaunchArgs(req agent.RunRequest) []string {
	args := slices.Clone(d.Args)
	if d.PolicyArgs != nil {
		args = append(args, d.PolicyArgs(effectivePolicy(req))...)
	}
	if d.PortFlag != "" && req.LocalPort > 0 {
		args = append(args, d.PortFlag+"="+strconv.Itoa(req.LocalPort))
	}
	return append(args, req.Args...)
}

// LaunchEnv is the definition's part of the child's environment:
// Definition.Env, Definition.RootEnv when running as root, TempEnv set to
// RunRequest.Env's TMPDIR, then the policy environment (later wins). A
// run's process spec (procrun.Launch.Spec) puts the provider's Options.Env
// and RunRequest.Env above it.
func (d Definition) LaunchEnv(req agent.RunRequest) map[string]string {
	out := maps.Clone(d.Env)
	if out == nil {
		out = map[string]string{}
	}
	if os.Geteuid() == 0 {
		maps.Copy(out, d.RootEnv)
	}
	if tmp := req.Env["TMPDIR"]; d.TempEnv != "" && tmp != "" {
		out[d.TempEnv] = tmp
	}
	if d.PolicyEnv != nil {
		maps.Copy(out, d.PolicyEnv(effectivePolicy(req)))
	}
	return out
}

// effectivePolicy is accept when the operator chose it, else ask: every tool
// that needs approval is asked through ACP and answered by the user or, when
// nobody can answer, by the policy (see agent.RunRequest.PolicyDecision).
func effectivePolicy(req agent.RunRequest) agent.ApprovalPolicy {
	if req.Approval == agent.ApprovalAccept {
		return agent.ApprovalAccept
	}
	return agent.ApprovalAsk
}

// Run executes one turn. See the agent package doc for the contract and the
// package doc for the protocol steps.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := p.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	// The model goes over the protocol, but a value no id has is refused the
	// same way as on a command line.
	if err := agent.CheckRunArgs(req); err != nil {
		return fmt.Errorf("%s: %w", p.def.ID, err)
	}
	if req.ResumeID != "" && (req.Fork || !p.def.Resume) {
		reason := "session/load is not used for this agent"
		if req.Fork {
			reason = "forking an ACP session is not supported"
		}
		return fmt.Errorf("%s resume %s: %s: %w", p.def.ID, req.ResumeID, reason, agent.ErrSessionNotFound)
	}
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return nil
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	cwd, err := filepath.Abs(cwd)
	if err != nil {
		return fmt.Errorf("%s cwd: %w", p.def.ID, err)
	}
	var fsys FileSystem
	if req.Container != nil {
		// A project chat: the agent runs in its container, where the session's
		// cwd is the container's workspace; the host's files are not its files,
		// so the fs client methods are refused there.
		cwd = req.Container.Dir()
	}
	decision := req.PolicyDecision()
	if req.Container == nil {
		fsys = DirFS{Root: cwd, ReadOnly: decision == agent.DecisionDecline}
	}
	parser := NewParser(ParserOptions{
		Provider:        p.def.ID,
		KnownSession:    req.ResumeID,
		EmitSession:     p.def.Resume,
		HoldReplay:      p.def.LoadQuiet > 0,
		SessionNotFound: p.def.SessionNotFound,
		AutoDecision:    decision,
		FS:              fsys,
		VerifiedWith:    p.def.VerifiedWith,
	})
	w := &wire{p: p, parser: parser, req: req, cwd: cwd}
	// A project chat runs in its container (Spec builds the lxc exec).
	spec := p.opts.Spec(req, p.def.LaunchArgs(req), p.def.LaunchEnv(req))
	spec.Dir = cwd
	if p.def.Native != nil && req.Container == nil {
		spec.Bin = p.def.Native.Resolve(spec.Bin)
	}
	if req.Container == nil {
		// Tools that left the agent's process group (kilo, copilot, droid
		// and claude-agent-acp start each shell command in a session of its
		// own) carry the run's token; they are killed once the run ended.
		// A container's processes end with its exec.
		token := procrun.RunToken()
		spec.Env = append(spec.Env, token)
		defer func() {
			if n := procrun.Sweep(token); n > 0 {
				logger.Info("killed processes the run left behind", "count", n)
			}
		}()
	}
	return procrun.Session{
		Provider:         p.def.ID,
		Spec:             spec,
		Wire:             w,
		Responses:        req.Responses,
		Logger:           logger,
		InstallHint:      p.def.InstallHint,
		InterruptTimeout: p.opts.StopGrace,
		ExitTimeout:      p.def.ExitTimeout,
		NoResult:         fmt.Sprintf("%s exited without answering the prompt", p.def.ID),
	}.Run(ctx, emit)
}
