// Provider: runs one Claude Code turn over the stream-json control protocol.

package claude

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// InstallHint tells an operator how to install the CLI.
const installHint = "npm install -g @anthropic-ai/claude-code"

// Defaults.
const (
	DefaultBin              = "claude"
	DefaultInterruptTimeout = 5 * time.Second
)

// Options configures a Provider.
type Options struct {
	// Launch is the executable (default "claude"; RunRequest.Bin overrides
	// it), the environment (above DefaultEnv, below RunRequest.Env), and
	// StopGrace: how long a cancelled run waits for the CLI's result after
	// the interrupt request (and for the CLI to exit after its result)
	// before the process is killed; default 5 s.
	procrun.Launch
}

// Provider runs Claude Code.
type Provider struct {
	logger *slog.Logger
	opts   Options
	grants grantStore // what was approved for each session (see Grants)
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	opts.Launch = opts.Launch.WithDefaults(DefaultBin, DefaultInterruptTimeout)
	return &Provider{logger: procrun.ProviderLogger(logger, ProviderID), opts: opts}
}

// ID returns "claude".
func (p *Provider) ID() agent.ProviderID { return ProviderID }

// Run executes one turn. See the agent package doc for the contract.
//
// The prompt goes to stdin as a stream-json user message; stdin stays open
// for control responses and the interrupt request and is closed once the
// result line arrived. A cancelled ctx sends the native interrupt, waits up to
// StopGrace for the result, then kills the CLI; the run ends with
// run.interrupted and Run returns nil. A CLI that exits without a result is a
// failure. A resume of an unknown session returns agent.ErrSessionNotFound.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := p.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	if err := agent.CheckRunArgs(req); err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	req = req.WithMCPEnv()
	prompt, err := PromptLine(req)
	if err != nil {
		return fmt.Errorf("claude prompt: %w", err)
	}
	parser := NewParser(procrun.KnownSession(req))
	// The rules approved for the session in earlier turns (a fork keeps
	// its parent's), remembered under the session the run ends on.
	parser.Grants = p.grants.get(req.ResumeID)
	defer func() { p.grants.put(parser.SessionID(), parser.Grants) }()
	if !asks(req) {
		// The CLI has no prompt tool and denies by itself; should a request
		// arrive anyway (e.g. from operator args), apply the policy.
		parser.AutoDecision = agent.DecisionDecline
		if req.Approval == agent.ApprovalAccept {
			parser.AutoDecision = agent.DecisionApprove
		}
	}
	return procrun.Session{
		Provider:         ProviderID,
		Spec:             p.opts.Spec(req, Args(req), DefaultEnv),
		Wire:             &wire{parser: parser, prompt: prompt},
		Responses:        req.Responses,
		Logger:           logger,
		InstallHint:      installHint,
		InterruptTimeout: p.opts.StopGrace,
	}.Run(ctx, emit)
}
