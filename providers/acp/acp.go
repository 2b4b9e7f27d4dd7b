// Provider: runs one turn of an ACP agent CLI over JSON-RPC on stdio.

package acp

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
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
	// Bin overrides Definition.Bin; RunRequest.Bin overrides both.
	Bin string
	// Env is extra environment for every run (above Definition.Env, below
	// RunRequest.Env).
	Env map[string]string
	// HostEnv returns the host environment to filter; default os.Environ.
	HostEnv func() []string
	// Secret reports keys that must never reach the child (see procrun.Environ).
	Secret func(key string) bool
	// InterruptTimeout is how long a cancelled run waits for the agent to
	// answer session/prompt after session/cancel, and how long a finished run
	// waits for the agent to exit after stdin closed, before it kills the
	// process; default 5 s.
	InterruptTimeout time.Duration
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
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.Bin == "" {
		opts.Bin = def.Bin
	}
	if opts.HostEnv == nil {
		opts.HostEnv = os.Environ
	}
	if opts.InterruptTimeout <= 0 {
		opts.InterruptTimeout = DefaultInterruptTimeout
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	return &Provider{def: def, logger: logger.With("provider", string(def.ID)), opts: opts}
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
	return append(args, req.Args...)
}

// LaunchEnv merges the child's extra environment: Definition.Env, the policy
// environment, then each of extra (provider options), then RunRequest.Env
// (later wins).
func (d Definition) LaunchEnv(req agent.RunRequest, extra ...map[string]string) map[string]string {
	out := maps.Clone(d.Env)
	if out == nil {
		out = map[string]string{}
	}
	if d.PolicyEnv != nil {
		maps.Copy(out, d.PolicyEnv(effectivePolicy(req)))
	}
	for _, m := range extra {
		maps.Copy(out, m)
	}
	maps.Copy(out, req.Env)
	return out
}

// effectivePolicy is accept when the operator chose it, else ask: every tool
// that needs approval is asked through ACP and answered by the user or, when
// nobody can answer, by the policy (see autoDecision).
func effectivePolicy(req agent.RunRequest) agent.ApprovalPolicy {
	if req.Approval == agent.ApprovalAccept {
		return agent.ApprovalAccept
	}
	return agent.ApprovalAsk
}

// autoDecision is the answer the policy gives every permission request, or
// "" when the user is asked.
func autoDecision(req agent.RunRequest) agent.Decision {
	switch {
	case req.Approval == agent.ApprovalAccept:
		return agent.DecisionApprove
	case req.Responses != nil && (req.Approval == agent.ApprovalAsk || req.Approval == ""):
		return ""
	}
	return agent.DecisionDecline
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
	bin := req.Bin
	if bin == "" {
		bin = p.opts.Bin
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
	decision := autoDecision(req)
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
	spec := procrun.Spec{
		Bin:   bin,
		Args:  p.def.LaunchArgs(req),
		Dir:   cwd,
		Env:   procrun.Environ(p.opts.HostEnv(), p.def.LaunchEnv(req, p.opts.Env), p.opts.Secret),
		Stdin: true,
		// A project chat runs in its container (procrun builds the lxc exec).
		Container: req.Container,
	}
	proc, err := procrun.Start(ctx, logger, spec)
	if err != nil {
		if errors.Is(err, agent.ErrNotInstalled) {
			return fmt.Errorf("%w (install: %s)", err, p.def.InstallHint)
		}
		return err
	}
	r := &run{
		p: p, logger: logger, proc: proc, parser: parser, Stream: agent.Stream{Emit: emit, Log: logger}, req: req, cwd: cwd,
	}
	return r.loop(ctx)
}

// Run phases.
const (
	phaseInit = iota
	phaseSession
	phaseSetup
	phasePrompt
	phaseDone
)

// setupCall is one request sent between session setup and the prompt.
type setupCall struct {
	what   string // "model" or "mode"
	method string
	params any
}

// run is the state of one Run, owned by the Run goroutine.
type run struct {
	p            *Provider
	logger       *slog.Logger
	proc         *procrun.Process
	parser       *Parser
	agent.Stream // Emit, Terminal, Failure
	req          agent.RunRequest
	cwd          string

	phase        int
	setup        []setupCall
	inFlight     *setupCall
	cancelled    bool
	notResumable bool
	fatal        error

	quiet     *time.Timer
	quietC    <-chan time.Time
	stopC     <-chan time.Time // kill deadline after cancel or after the turn
	stopTimer *time.Timer
}

func (r *run) loop(ctx context.Context) error {
	lines := make(chan []byte, 64)
	readDone := make(chan error, 1)
	go func() {
		readDone <- r.proc.Each(func(line []byte) error {
			lines <- bytes.Clone(line)
			return nil
		})
		close(lines)
	}()
	start := time.NewTimer(r.p.opts.StartTimeout)
	defer start.Stop()
	startC := start.C
	defer func() {
		if r.stopTimer != nil {
			r.stopTimer.Stop()
		}
		if r.quiet != nil {
			r.quiet.Stop()
		}
	}()

	r.write(r.parser.Request("initialize", InitializeParams{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: ClientCapabilities{},
		ClientInfo:         ClientInfo,
	}))
	responses := r.req.Responses
	ctxDone := ctx.Done()
	for lines != nil {
		if r.phase == phaseDone {
			responses = nil
		}
		if r.phase >= phasePrompt {
			startC = nil
		}
		select {
		case line, ok := <-lines:
			if !ok {
				lines = nil
				break
			}
			r.handleLine(line)
		case resp, ok := <-responses:
			if !ok {
				responses = nil
				break
			}
			r.respond(resp)
		case <-ctxDone:
			ctxDone = nil
			r.cancel()
		case <-r.quietC:
			r.quietC = nil
			for _, ev := range r.parser.EndReplay() {
				r.Send(ev)
			}
			r.startSetup()
		case <-startC:
			startC = nil
			r.logger.Warn("agent did not get ready in time, killing", "timeout", r.p.opts.StartTimeout)
			r.Send(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("%s did not start a session within %s", r.p.def.ID, r.p.opts.StartTimeout)})
			r.kill()
		case <-r.stopC:
			r.stopC = nil
			r.logger.Warn("agent did not stop in time, killing", "timeout", r.p.opts.InterruptTimeout)
			r.kill()
		}
	}
	if err := <-readDone; err != nil {
		r.logger.Warn("read stdout", "err", err)
	}
	return r.finish(r.proc.Wait())
}

func (r *run) write(line []byte) {
	if err := r.proc.WriteLine(line); err != nil {
		r.logger.Debug("write stdin", "err", err)
	}
}

// flush writes the parser's queued answers.
func (r *run) flush() {
	for _, l := range r.parser.TakeOutgoing() {
		r.write(l)
	}
}

func (r *run) kill() {
	_ = r.proc.Kill()
	r.phase = phaseDone
}

// armStop arms the kill deadline once.
func (r *run) armStop() {
	if r.stopTimer == nil {
		r.stopTimer = time.NewTimer(r.p.opts.InterruptTimeout)
		r.stopC = r.stopTimer.C
	}
}

// done ends the conversation: stdin closes (the agent exits) and the kill
// deadline is armed.
func (r *run) done() {
	if r.phase == phaseDone {
		return
	}
	r.phase = phaseDone
	_ = r.proc.CloseStdin()
	r.armStop()
}

func (r *run) handleLine(line []byte) {
	parsed, err := r.parser.Parse(line)
	if err != nil {
		if errors.Is(err, ErrDuplicateRequest) && r.fatal == nil {
			r.fatal = err
			r.logger.Error("protocol violation, stopping the agent", "err", err)
			r.kill()
		} else {
			r.logger.Warn("stdout line skipped", "err", err, "bytes", len(line), "excerpt", procrun.Excerpt(line, 256))
		}
	}
	r.flush()
	for _, ev := range parsed.Events {
		r.Send(ev)
	}
	if parsed.Reply != nil {
		r.onReply(parsed.Reply)
	}
	if r.quiet != nil && r.quietC != nil && r.parser.Replaying() {
		r.quiet.Reset(r.p.def.LoadQuiet)
	}
	if r.Terminal != "" || r.parser.SessionNotFound() {
		r.done()
	}
}

// onReply sequences the protocol: initialize → session/new or session/load
// → model and mode → session/prompt.
func (r *run) onReply(rep *Reply) {
	if r.Terminal != "" || r.phase == phaseDone {
		return
	}
	switch rep.Method {
	case "initialize":
		if rep.Err != nil {
			return
		}
		r.phase = phaseSession
		if r.req.ResumeID == "" {
			r.write(r.parser.Request("session/new", sessionParams{Cwd: r.cwd, McpServers: []any{}}))
			return
		}
		if !r.parser.LoadSession() {
			r.notResumable = true
			r.Send(agent.Event{Type: agent.EventSystem, Subtype: "session_not_found",
				Text: fmt.Sprintf("%s does not advertise session/load; session %s cannot be resumed", r.parser.agentName(), r.req.ResumeID)})
			r.done()
			return
		}
		r.write(r.parser.Request("session/load", sessionParams{SessionID: r.req.ResumeID, Cwd: r.cwd, McpServers: []any{}}))
	case "session/new":
		if rep.Err == nil {
			r.startSetup()
		}
	case "session/load":
		if rep.Err != nil {
			return
		}
		if r.p.def.LoadQuiet > 0 {
			r.quiet = time.NewTimer(r.p.def.LoadQuiet)
			r.quietC = r.quiet.C
			return
		}
		r.startSetup()
	case "session/set_config_option", "session/set_model", "session/set_mode":
		call := r.inFlight
		r.inFlight = nil
		if rep.Err != nil && call != nil && call.what == "model" {
			r.Send(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("cannot select model %q: %s", r.req.Model, rep.Err.Error())})
			return
		}
		r.nextSetup()
	}
}

// startSetup queues the model and mode requests, then sends the prompt.
func (r *run) startSetup() {
	r.phase = phaseSetup
	if r.req.Model != "" {
		if m, params, ok := r.parser.ModelRequest(r.req.Model); ok {
			r.setup = append(r.setup, setupCall{what: "model", method: m, params: params})
		} else {
			r.Send(agent.Event{Type: agent.EventSystem, Subtype: "model_not_selectable",
				Text: fmt.Sprintf("%s offers no model selector; model %q is ignored", r.parser.agentName(), r.req.Model)})
		}
	}
	if r.req.Mode == agent.ModePlan {
		if m, params, ok := r.parser.ModeRequest("plan"); ok {
			r.setup = append(r.setup, setupCall{what: "mode", method: m, params: params})
		} else {
			r.Send(agent.Event{Type: agent.EventSystem, Subtype: "mode_not_selectable",
				Text: fmt.Sprintf("%s offers no plan mode; running in its default mode", r.parser.agentName())})
		}
	}
	r.nextSetup()
}

func (r *run) nextSetup() {
	if len(r.setup) > 0 {
		c := r.setup[0]
		r.setup = r.setup[1:]
		r.inFlight = &c
		r.write(r.parser.Request(c.method, c.params))
		return
	}
	r.prompt()
}

func (r *run) prompt() {
	blocks := make([]ContentBlock, 0, len(r.req.Images)+1)
	if len(r.req.Images) > 0 && !r.parser.ImagePrompts() {
		r.Send(agent.Event{Type: agent.EventSystem, Subtype: "images_dropped",
			Text: fmt.Sprintf("%s does not accept images; %d image(s) not sent", r.parser.agentName(), len(r.req.Images))})
	} else {
		for _, img := range r.req.Images {
			if img.MediaType == "" || len(img.Data) == 0 {
				continue
			}
			blocks = append(blocks, ContentBlock{Type: "image", MimeType: img.MediaType, Data: base64.StdEncoding.EncodeToString(img.Data)})
		}
	}
	blocks = append(blocks, ContentBlock{Type: "text", Text: r.req.Prompt})
	r.phase = phasePrompt
	r.write(r.parser.Request("session/prompt", promptParams{SessionID: r.parser.SessionID(), Prompt: blocks}))
}

// cancel stops the turn natively: session/cancel, pending permission
// requests answered cancelled, then a deadline for the prompt answer. Before
// the prompt was sent there is nothing to cancel: the agent is killed.
func (r *run) cancel() {
	r.cancelled = true
	if r.Terminal != "" || r.phase == phaseDone {
		return
	}
	if r.phase < phasePrompt {
		r.logger.Info("cancelled before the prompt, stopping the agent")
		r.kill()
		return
	}
	r.logger.Info("cancelling the turn")
	evs := r.parser.Cancel()
	r.flush()
	for _, ev := range evs {
		r.Send(ev)
	}
	r.armStop()
}

func (r *run) respond(resp agent.InteractionResponse) {
	ev, err := r.parser.Respond(resp)
	if err != nil {
		r.logger.Warn("interaction response ignored", "err", err)
		return
	}
	r.flush()
	r.Send(ev)
	if r.parser.Cancelling() {
		r.cancelled = true
		r.armStop()
	}
}

// send emits ev unless the run already ended.

func (r *run) finish(waitErr error) error {
	if r.Terminal == "" {
		for _, ev := range r.parser.EndTurn() {
			r.Send(ev)
		}
	}
	id := r.p.def.ID
	switch {
	case r.fatal != nil:
		if r.Terminal == "" {
			r.Send(agent.Event{Type: agent.EventRunFailed, Text: r.fatal.Error()})
		}
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, r.fatal)
	case r.Terminal == "" && (r.parser.SessionNotFound() || r.notResumable):
		return fmt.Errorf("%s session/load %s: %w", id, r.req.ResumeID, agent.ErrSessionNotFound)
	case r.Terminal == agent.EventRunCompleted:
		if waitErr != nil {
			r.logger.Warn("agent exited non-zero after a completed turn", "err", waitErr)
		}
		return nil
	case r.Terminal == agent.EventRunInterrupted:
		return nil
	case r.Terminal == agent.EventRunFailed:
		return fmt.Errorf("%w: %s", agent.ErrRunFailed, r.Failure)
	case r.cancelled:
		r.Send(agent.Event{Type: agent.EventRunInterrupted, Text: "interrupted"})
		return nil
	}
	msg := fmt.Sprintf("%s exited without answering the prompt", id)
	if tail := procrun.StderrTail(r.proc.Stderr(), 512); tail != "" {
		msg += ": " + tail
	}
	r.Send(agent.Event{Type: agent.EventRunFailed, Text: msg})
	if waitErr != nil {
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, waitErr)
	}
	return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
}
