// Provider: runs one unstructured CLI, streaming raw stdout chunks.

package plain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Defaults and bounds.
const (
	DefaultStopGrace = 5 * time.Second
	// DefaultArgvLimit keeps an argv prompt under Linux's 128 KiB
	// per-argument limit; the wiring may pass registry.ArgvBudget instead.
	DefaultArgvLimit = 96 << 10
	// DefaultResumeFlag is Antigravity's resume option.
	DefaultResumeFlag = "--resume"
	// TailBytes is the combined stdout+stderr tail kept for failures.
	TailBytes = 4 << 10
	// readChunk is the largest stdout read turned into one delta.
	readChunk = 32 << 10
)

// SubtypeSignIn is the system subtype of a failure that looks like a
// missing sign-in; the run.failed text then says what to do.
const SubtypeSignIn = "sign_in_required"

// Options configures a Provider.
type Options struct {
	// CLI selects the command (required).
	CLI CLI
	// ID is the provider id; default the CLI's name.
	ID agent.ProviderID
	// Bin is the executable; default the CLI's. RunRequest.Bin overrides it.
	Bin string
	// Env is extra environment for every run (below RunRequest.Env).
	Env map[string]string
	// HostEnv returns the host environment to filter; default os.Environ.
	HostEnv func() []string
	// Secret reports keys that must never reach the child (see procrun.Environ).
	Secret func(key string) bool
	// StopGrace is how long a cancelled run waits after SIGINT before the
	// process group is killed; default 5 s.
	StopGrace time.Duration
	// ArgvLimit is the longest prompt passed as one argument; zero means
	// DefaultArgvLimit.
	ArgvLimit int
	// BrainDir is Antigravity's session directory; default
	// ~/.gemini/antigravity-cli/brain of the child's HOME.
	BrainDir string
	// ResumeFlag is Antigravity's resume option; default "--resume".
	ResumeFlag string
	// TempDir holds prompt files; default os.TempDir().
	TempDir string
}

// Provider runs one unstructured CLI.
type Provider struct {
	logger *slog.Logger
	opts   Options
	info   cliInfo
}

var _ agent.Provider = (*Provider)(nil)

// New returns a Provider for opts.CLI; an unknown CLI returns ErrUnknownCLI.
// A nil logger discards logs.
func New(logger *slog.Logger, opts Options) (*Provider, error) {
	info, ok := clis[opts.CLI]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownCLI, opts.CLI)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.ID == "" {
		opts.ID = agent.ProviderID(opts.CLI)
	}
	if opts.Bin == "" {
		opts.Bin = info.bin
	}
	if opts.HostEnv == nil {
		opts.HostEnv = os.Environ
	}
	if opts.StopGrace <= 0 {
		opts.StopGrace = DefaultStopGrace
	}
	if opts.ArgvLimit <= 0 {
		opts.ArgvLimit = DefaultArgvLimit
	}
	if opts.ResumeFlag == "" {
		opts.ResumeFlag = DefaultResumeFlag
	}
	return &Provider{logger: logger.With("provider", string(opts.ID)), opts: opts, info: info}, nil
}

// ID returns the provider id.
func (p *Provider) ID() agent.ProviderID { return p.opts.ID }

// Run executes one turn. See the package doc for the stream and session
// rules and the agent package doc for the contract.
func (p *Provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	logger := p.logger.With("chat_id", req.ChatID, "run_id", req.RunID)
	inv, err := Command(p.opts.CLI, req, p.opts.ArgvLimit, p.opts.ResumeFlag)
	if errors.Is(err, ErrPromptTooLarge) {
		emit(agent.Event{Type: agent.EventRunFailed, Text: err.Error()})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
	}
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return nil
	}
	bin := req.Bin
	if bin == "" {
		bin = p.opts.Bin
	}
	path, err := procrun.LookPath(bin)
	if err != nil {
		return fmt.Errorf("%w (install: %s)", err, p.info.install)
	}
	env := procrun.Environ(p.opts.HostEnv(), merge(p.opts.Env, req.Env), p.opts.Secret)
	if inv.PromptFile {
		f, err := os.CreateTemp(p.opts.TempDir, "threadline-prompt-*.md")
		if err != nil {
			return fmt.Errorf("%s prompt file: %w", p.opts.ID, err)
		}
		name := f.Name()
		defer os.Remove(name)
		_, werr := f.WriteString(req.Prompt)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fmt.Errorf("%s prompt file: %w", p.opts.ID, werr)
		}
		for i, a := range inv.Args {
			if a == PromptFileArg {
				inv.Args[i] = name
			}
		}
	}
	if len(req.Images) > 0 {
		logger.Warn("images dropped: plain CLIs take text only", "images", len(req.Images))
		emit(agent.Event{Type: agent.EventSystem, Subtype: "images_dropped", Text: fmt.Sprintf("%s takes a text prompt here; the attached images were not sent.", p.info.name)})
	}
	if req.Fork && req.ResumeID != "" {
		logger.Info("no native fork; starting a fresh session")
	}

	// Antigravity reports no session id: snapshot its brain directory
	// around a fresh run. Inside a project container the directory is not on
	// this host, so no session is discovered there.
	var brain string
	var before map[string]bool
	if p.opts.CLI == Antigravity && resumeID(req) == "" && req.Container == nil {
		brain = p.brainDir(env)
		before = snapshot(brain)
	}

	dir := req.Cwd
	var container *procrun.ContainerCmd
	if req.Container != nil {
		// A project chat runs in its container: the same streaming over lxc exec.
		// Its environment goes in an env file pushed into the container,
		// never on the lxc command line.
		cc, err := procrun.ContainerCommand(procrun.Spec{Bin: path, Args: inv.Args, Env: env, Container: req.Container})
		if err != nil {
			return err
		}
		if err := cc.Push(ctx); err != nil {
			return err
		}
		container = &cc
		path, inv.Args, env, dir = cc.Bin, cc.Args, cc.ClientEnv, ""
	}
	r := &run{p: p, logger: logger, Stream: agent.Stream{Emit: emit, Log: logger}, tail: &tailBuffer{max: TailBytes}}
	err = r.exec(ctx, path, inv, dir, env)
	if err != nil && container != nil {
		container.Remove(ctx) // in case the command never reached the script that removes it
	}
	if err != nil || r.Terminal != "" {
		return err
	}
	if brain != "" {
		after := snapshot(brain)
		if id, n := newSession(before, after); id != "" {
			emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: id})
		} else {
			logger.Info("no single new antigravity session directory; session not saved", "new_dirs", n, "dir", brain)
		}
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// brainDir is Options.BrainDir or ~/.gemini/antigravity-cli/brain of the
// child's HOME.
func (p *Provider) brainDir(env []string) string {
	if p.opts.BrainDir != "" {
		return p.opts.BrainDir
	}
	home := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".gemini", "antigravity-cli", "brain")
}

// run is one execution, owned by the Run goroutine.
type run struct {
	p            *Provider
	logger       *slog.Logger
	agent.Stream // Emit, Terminal, Failure
	tail         *tailBuffer
	output       int // bytes of text emitted
}

type chunkMsg struct {
	b   []byte
	err error
}

// exec starts the child, streams stdout as assistant deltas and waits. It
// emits the terminal event itself only on failure or interruption; a clean
// exit leaves completion to Run (after session discovery).
func (r *run) exec(ctx context.Context, path string, inv Invocation, dir string, env []string) error {
	cmd := exec.Command(path, inv.Args...)
	cmd.Dir = dir
	cmd.Env = env
	setGroup(cmd)
	cmd.WaitDelay = 5 * time.Second
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("stdout pipe: %w", err)
	}
	cmd.Stderr = io.MultiWriter(r.tail, stderrLog{r.logger})
	if inv.Stdin != nil {
		cmd.Stdin = bytes.NewReader(append(append([]byte(nil), inv.Stdin...), '\n'))
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %s: %w (install: %s)", agent.ErrNotInstalled, path, err, r.p.info.install)
		}
		return fmt.Errorf("start %s: %w", path, err)
	}
	r.logger.Debug("process started", "pid", cmd.Process.Pid, "args", len(inv.Args))

	chunks := make(chan chunkMsg, 16)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, readChunk)
			n, err := stdout.Read(buf)
			if n > 0 {
				chunks <- chunkMsg{b: buf[:n]}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
					chunks <- chunkMsg{err: err}
				}
				return
			}
		}
	}()

	var ch chunker
	ctxDone := ctx.Done()
	var deadline <-chan time.Time
	cancelled := false
	for chunks != nil {
		select {
		case m, ok := <-chunks:
			if !ok {
				chunks = nil
				break
			}
			if m.err != nil {
				r.logger.Warn("read stdout", "err", m.err)
				continue
			}
			_, _ = r.tail.Write(m.b)
			r.delta(ch.feed(m.b))
		case <-ctxDone:
			ctxDone = nil
			cancelled = true
			r.logger.Info("interrupting", "grace", r.p.opts.StopGrace)
			_ = interruptGroup(cmd)
			t := time.NewTimer(r.p.opts.StopGrace)
			defer t.Stop()
			deadline = t.C
		case <-deadline:
			deadline = nil
			r.logger.Warn("child ignored interrupt, killing")
			_ = killGroup(cmd)
		}
	}
	r.delta(ch.flush())
	waitErr := cmd.Wait()
	// Tools the CLI started may still hold the group; end them with it.
	_ = killGroup(cmd)

	if cancelled {
		r.Send(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled"})
		return nil
	}
	tail := r.tail.String()
	if r.p.info.signIn != nil && r.p.info.signIn.MatchString(tail) && (waitErr != nil || r.output == 0) {
		r.Send(agent.Event{Type: agent.EventSystem, Subtype: SubtypeSignIn, Text: r.p.info.signInHelp})
		r.Send(agent.Event{Type: agent.EventRunFailed, Text: r.p.info.signInHelp})
		return fmt.Errorf("%w: %s: sign-in required", agent.ErrRunFailed, r.p.opts.ID)
	}
	if waitErr != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			code = ee.ExitCode()
		}
		msg := fmt.Sprintf("%s exited with status %d", r.p.info.name, code)
		if t := procrun.StderrTail(tail, 1024); t != "" {
			msg += ": " + t
		}
		r.Send(agent.Event{Type: agent.EventRunFailed, Text: msg})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, &procrun.ProcessError{ExitCode: code, Stderr: tail, Err: waitErr})
	}
	if r.output == 0 {
		msg := fmt.Sprintf("%s exited without printing an answer", r.p.info.name)
		if t := procrun.StderrTail(tail, 1024); t != "" {
			msg += ": " + t
		}
		r.Send(agent.Event{Type: agent.EventRunFailed, Text: msg})
		return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
	}
	return nil
}

func (r *run) delta(s string) {
	if s == "" {
		return
	}
	r.output += len(s)
	r.Send(agent.Event{Type: agent.EventAssistantDelta, Text: s})
}

// stderrLog logs stderr writes at debug level.
type stderrLog struct{ logger *slog.Logger }

func (s stderrLog) Write(p []byte) (int, error) {
	if t := strings.TrimSpace(string(p)); t != "" {
		s.logger.Debug("stderr", "text", procrun.Excerpt([]byte(t), 1024))
	}
	return len(p), nil
}

// merge returns the union of maps; later maps win.
func merge(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
