// Provider: runs one Claude Code turn over the stream-json control protocol.

package claude

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
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
	DefaultVersionTimeout   = 5 * time.Second
)

// Options configures a Provider.
type Options struct {
	// Bin is the executable; default "claude". RunRequest.Bin overrides it.
	Bin string
	// Env is extra environment for every run (below RunRequest.Env).
	Env map[string]string
	// HostEnv returns the host environment to filter; default os.Environ.
	HostEnv func() []string
	// Secret reports keys that must never reach the child (see procrun.Environ).
	Secret func(key string) bool
	// InterruptTimeout is how long a cancelled run waits for the CLI's result
	// after the interrupt request (and for the CLI to exit after its result)
	// before the process is killed; default 5 s.
	InterruptTimeout time.Duration
	// VersionTimeout bounds `claude --version`; default 5 s.
	VersionTimeout time.Duration
}

// Provider runs Claude Code.
type Provider struct {
	logger *slog.Logger
	opts   Options
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider. A nil logger discards logs.
func New(logger *slog.Logger, opts Options) *Provider {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bin == "" {
		opts.Bin = DefaultBin
	}
	if opts.HostEnv == nil {
		opts.HostEnv = os.Environ
	}
	if opts.InterruptTimeout <= 0 {
		opts.InterruptTimeout = DefaultInterruptTimeout
	}
	if opts.VersionTimeout <= 0 {
		opts.VersionTimeout = DefaultVersionTimeout
	}
	return &Provider{logger: logger.With("provider", string(ProviderID)), opts: opts}
}

// ID returns "claude".
func (p *Provider) ID() agent.ProviderID { return ProviderID }

// InstallHint tells an operator how to install the CLI.
func (p *Provider) InstallHint() string { return installHint }

var versionRE = regexp.MustCompile(`\d+\.\d+\.\d+\S*`)

// Capabilities runs `<bin> --version` and reports what the adapter supports.
// A missing executable returns an error wrapping agent.ErrNotInstalled.
func (p *Provider) Capabilities(ctx context.Context, req agent.CapabilityRequest) (agent.Capabilities, error) {
	bin := req.Bin
	if bin == "" {
		bin = p.opts.Bin
	}
	caps := agent.Capabilities{
		Resume: true, Fork: true, Interactions: true, Images: true,
		Models:  []string{"sonnet", "opus", "haiku"},
		Efforts: []string{"low", "medium", "high", "xhigh", "max"},
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.VersionTimeout)
	defer cancel()
	env := procrun.Environ(p.opts.HostEnv(), childEnv(p.opts.Env), p.opts.Secret)
	proc, err := procrun.Start(ctx, p.logger, procrun.Spec{Bin: bin, Args: []string{"--version"}, Env: env})
	if err != nil {
		return caps, err
	}
	stop := context.AfterFunc(ctx, func() { _ = proc.Kill() })
	defer stop()
	var out bytes.Buffer
	_ = proc.Each(func(line []byte) error {
		if out.Len() < 4096 {
			out.Write(line)
			out.WriteByte('\n')
		}
		return nil
	})
	if err := proc.Wait(); err != nil {
		if ctx.Err() != nil {
			return caps, fmt.Errorf("%s --version: %w", bin, ctx.Err())
		}
		return caps, fmt.Errorf("%s --version: %w", bin, err)
	}
	caps.Version = versionRE.FindString(out.String())
	if caps.Version == "" {
		caps.Version = strings.TrimSpace(out.String())
	}
	return caps, nil
}

// Run executes one turn. See the agent package doc for the contract.
//
// The prompt goes to stdin as a stream-json user message; stdin stays open
// for control responses and the interrupt request and is closed once the
// result line arrived. A cancelled ctx sends the native interrupt, waits up to
// InterruptTimeout for the result, then kills the CLI; the run ends with
// run.interrupted and Run returns nil. A CLI that exits without a result is a
// failure. A resume of an unknown session returns agent.ErrSessionNotFound.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := p.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	bin := req.Bin
	if bin == "" {
		bin = p.opts.Bin
	}
	if err := agent.CheckRunArgs(req); err != nil {
		return fmt.Errorf("claude: %w", err)
	}
	prompt, err := PromptLine(req)
	if err != nil {
		return fmt.Errorf("claude prompt: %w", err)
	}
	known := req.ResumeID
	if req.Fork {
		known = ""
	}
	parser := NewParser(known)
	if !asks(req) {
		// The CLI has no prompt tool and denies by itself; should a request
		// arrive anyway (e.g. from operator args), apply the policy.
		parser.AutoDecision = agent.DecisionDecline
		if req.Approval == agent.ApprovalAccept {
			parser.AutoDecision = agent.DecisionApprove
		}
	}
	spec := procrun.Spec{
		Bin:       bin,
		Args:      Args(req),
		Dir:       req.Cwd,
		Env:       procrun.Environ(p.opts.HostEnv(), childEnv(p.opts.Env, req.Env), p.opts.Secret),
		Stdin:     true,
		Container: req.Container,
	}
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return nil
	}
	proc, err := procrun.Start(ctx, logger, spec)
	if err != nil {
		if errors.Is(err, agent.ErrNotInstalled) {
			return fmt.Errorf("%w (install: %s)", err, installHint)
		}
		return err
	}
	r := &run{
		logger:  logger,
		proc:    proc,
		parser:  parser,
		Stream:  agent.Stream{Emit: emit, Log: logger},
		timeout: p.opts.InterruptTimeout,
	}
	if err := proc.WriteLine(prompt); err != nil {
		logger.Warn("write prompt", "err", err)
	}
	return r.loop(ctx, req.Responses)
}

// run is the state of one Run, owned by the Run goroutine.
type run struct {
	logger       *slog.Logger
	proc         *procrun.Process
	parser       *Parser
	agent.Stream // Emit, Terminal, Failure
	timeout      time.Duration

	interrupts int
	cancelled  bool
	killed     bool
	fatal      error
}

func (r *run) loop(ctx context.Context, responses <-chan agent.InteractionResponse) error {
	lines := make(chan []byte, 64)
	readDone := make(chan error, 1)
	go func() {
		readDone <- r.proc.Each(func(line []byte) error {
			lines <- bytes.Clone(line)
			return nil
		})
		close(lines)
	}()

	ctxDone := ctx.Done()
	var deadline <-chan time.Time
	var timer *time.Timer
	arm := func() {
		if timer == nil {
			timer = time.NewTimer(r.timeout)
			deadline = timer.C
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()

	for lines != nil {
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			r.handleLine(line)
			if r.Terminal != "" || r.parser.SawResult() || r.fatal != nil {
				// The turn is over: let the CLI exit, but not forever.
				_ = r.proc.CloseStdin()
				responses = nil
				arm()
			}
		case resp, ok := <-responses:
			if !ok {
				responses = nil
				break
			}
			r.respond(resp)
		case <-ctxDone:
			ctxDone = nil
			r.cancelled = true
			r.parser.Interrupting = true
			if r.Terminal == "" {
				r.interrupts++
				r.logger.Info("interrupting claude")
				if err := r.proc.WriteLine(interruptLine(r.interrupts)); err != nil {
					r.logger.Warn("write interrupt", "err", err)
				}
			}
			arm()
		case <-deadline:
			deadline = nil
			r.logger.Warn("claude did not finish in time, killing", "timeout", r.timeout)
			r.killed = true
			_ = r.proc.Kill()
		}
	}
	if err := <-readDone; err != nil {
		r.logger.Warn("read stdout", "err", err)
	}
	waitErr := r.proc.Wait()
	return r.finish(waitErr)
}

func (r *run) handleLine(line []byte) {
	evs, err := r.parser.Parse(line)
	if err != nil {
		if errors.Is(err, ErrDuplicateRequest) && r.fatal == nil {
			r.fatal = err
			r.logger.Error("protocol violation, stopping claude", "err", err)
			_ = r.proc.Kill()
			r.killed = true
		} else {
			r.logger.Warn("stdout line skipped", "err", err, "bytes", len(line), "excerpt", procrun.Excerpt(line, 256))
		}
	}
	r.flush()
	for _, ev := range evs {
		r.Send(ev)
	}
}

// flush writes the parser's queued control responses.
func (r *run) flush() {
	for _, l := range r.parser.TakeOutgoing() {
		if err := r.proc.WriteLine(l); err != nil {
			r.logger.Warn("write control response", "err", err)
		}
	}
}

func (r *run) respond(resp agent.InteractionResponse) {
	ev, err := r.parser.Respond(resp)
	if err != nil {
		r.logger.Warn("interaction response ignored", "err", err)
		return
	}
	r.flush()
	r.Send(ev)
}

// send emits ev unless the run already ended.

func (r *run) finish(waitErr error) error {
	if r.Terminal == "" {
		for _, ev := range r.parser.EndPending() {
			r.Send(ev)
		}
	}
	switch {
	case r.fatal != nil:
		if r.Terminal == "" {
			r.Send(agent.Event{Type: agent.EventRunFailed, Text: r.fatal.Error()})
		}
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, r.fatal)
	case r.parser.SessionNotFound():
		return fmt.Errorf("claude resume: %w", agent.ErrSessionNotFound)
	case r.Terminal == agent.EventRunCompleted:
		if waitErr != nil {
			r.logger.Warn("claude exited non-zero after a successful result", "err", waitErr)
		}
		return nil
	case r.Terminal == agent.EventRunInterrupted:
		return nil
	case r.Terminal == agent.EventRunFailed:
		if waitErr != nil {
			return fmt.Errorf("%w: %s: %w", agent.ErrRunFailed, r.Failure, waitErr)
		}
		return fmt.Errorf("%w: %s", agent.ErrRunFailed, r.Failure)
	case r.cancelled:
		r.Send(agent.Event{Type: agent.EventRunInterrupted, Text: "interrupted"})
		return nil
	}
	msg := "claude exited without a result"
	if tail := procrun.StderrTail(r.proc.Stderr(), 512); tail != "" {
		msg += ": " + tail
	}
	r.Send(agent.Event{Type: agent.EventRunFailed, Text: msg})
	if waitErr != nil {
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, waitErr)
	}
	return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
}
