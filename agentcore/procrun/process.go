// Package procrun runs agent CLIs as child processes that speak line protocols.
//
// A Process is started from an argument array (never a shell) with an explicit,
// filtered environment (see Environ). Its lifetime is not tied to a context:
// stopping an agent is the provider's job (native interrupt with a deadline,
// then Kill). The caller reads stdout with Each, writes stdin with WriteLine and
// finally calls Wait. Run wraps this for simple one-way line protocols.
//
// Limits: a stdout line may be up to MaxLineBytes (16 MiB); a longer line is
// logged, discarded up to its newline and reading continues (a Session says
// so in a system event and the run fails: ErrLineTooLong). stderr is kept in
// a buffer holding its last MaxStderrBytes (64 KiB) and every stderr line is
// logged at debug level.
package procrun

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Default limits.
const (
	// MaxLineBytes is the longest stdout line handed to a handler.
	MaxLineBytes = 16 << 20
	// MaxStderrBytes is how much of stderr (its tail) is kept.
	MaxStderrBytes = 64 << 10
	// maxStderrLine bounds one logged stderr line.
	maxStderrLine = 1 << 20
	// excerptBytes bounds line excerpts in logs.
	excerptBytes = 256
	// waitDelay bounds how long Wait waits for I/O after the child exited.
	waitDelay = 5 * time.Second
)

// ErrStdinClosed is returned by WriteLine after CloseStdin or without Spec.Stdin.
var ErrStdinClosed = errors.New("procrun: stdin closed")

// Spec describes a child process. Args never pass through a shell.
type Spec struct {
	// Bin is the executable: a name looked up in PATH or a path.
	Bin  string
	Args []string
	// Dir is the working directory; empty means the current one.
	Dir string
	// Env is the complete KEY=VALUE environment, already filtered (see Environ).
	// A nil Env gives the child an empty environment, never the host's.
	Env []string
	// Stdin opens a pipe to the child's stdin for WriteLine; otherwise stdin is
	// /dev/null.
	Stdin bool
	// ForcedEnv are provider-forced KEY=VALUE entries: they win over Env and,
	// in a container, over the project's secrets (see ContainerEnv).
	ForcedEnv []string
	// Container, when set (from agent.RunRequest.Container), runs the command
	// inside that LXD instance with `lxc exec` instead of on the host; Dir is
	// then ignored (see ContainerCommand).
	Container *agent.ContainerTarget
	// Isolation, when set, runs this host command as another user (see
	// Isolation); otherwise the context's (WithIsolation) applies. Ignored
	// with Container.
	Isolation *Isolation
	// Sandbox, when set, confines this host command (see Sandbox);
	// otherwise the context's (WithSandbox) applies. Ignored with Container.
	Sandbox *Sandbox
}

// ProcessError is a child that exited unsuccessfully.
type ProcessError struct {
	// ExitCode is the exit status, or -1 when the child was killed by a signal.
	ExitCode int
	// Stderr is the captured stderr tail.
	Stderr string
	Err    error
}

// Error includes the exit status and a trimmed stderr tail.
func (e *ProcessError) Error() string {
	msg := fmt.Sprintf("exit status %d", e.ExitCode)
	if e.Err != nil {
		msg = e.Err.Error()
	}
	if tail := StderrTail(e.Stderr, 512); tail != "" {
		msg += ": " + tail
	}
	return msg
}

// Unwrap returns the underlying error.
func (e *ProcessError) Unwrap() error { return e.Err }

// StderrTail returns the last max bytes of s, trimmed, with line breaks folded
// into " | " so it fits in one log or chat line.
func StderrTail(s string, max int) string {
	s = strings.TrimSpace(s)
	if len(s) > max {
		s = "…" + strings.TrimLeft(s[len(s)-max:], "\n")
	}
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' })
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return strings.Join(lines, " | ")
}

// LookPath resolves bin like exec.LookPath. A missing executable is reported as
// an error wrapping agent.ErrNotInstalled that names bin.
func LookPath(bin string) (string, error) {
	if bin == "" {
		return "", fmt.Errorf("%w: empty executable name", agent.ErrNotInstalled)
	}
	p, err := exec.LookPath(bin)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %w", agent.ErrNotInstalled, bin, err)
	}
	return p, nil
}

// Process is a running child. WriteLine, CloseStdin, Signal, Kill and Stderr
// are safe for concurrent use; Each and Wait are called by one goroutine, Each
// first.
type Process struct {
	logger *slog.Logger
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr *tailBuffer

	stdinMu sync.Mutex
	stdin   io.WriteCloser // nil once closed

	waitOnce sync.Once
	waitErr  error
	dropOnce sync.Once

	// relay, when set, is the relayed child this Process stands for; the
	// fields above are then unused (see relay.go).
	relay *relayProc
	// launch is what was started; for a container run, Wait removes its env
	// file after an unsuccessful exit.
	launch launch
}

// Start launches the child described by spec. ctx only scopes the start itself:
// the child outlives it and is stopped with Signal or Kill. A missing
// executable returns an error wrapping agent.ErrNotInstalled; for a container
// run, a missing lxc client returns ErrContainerClient.
//
// When ctx carries a RelayRun (WithRelay) not yet claimed, the child runs
// under a relay that outlives this process, or, for a reattach, the Process
// follows the run's existing relay (see relay.go). The API is the same.
func Start(ctx context.Context, logger *slog.Logger, spec Spec) (*Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	l, err := launchOf(spec)
	if err != nil {
		return nil, err
	}
	iso := isolationOf(ctx, spec)
	var cred *credential
	if iso != nil {
		l, cred = iso.apply(l)
	}
	if sb := sandboxOf(ctx, spec); sb != nil {
		if l, err = sb.wrap(l, iso); err != nil {
			return nil, err
		}
	}
	if rr := relayOf(ctx); rr != nil && rr.claim() {
		if rr.reattach { // the relay runs the agent already: nothing to push
			return startRelayed(ctx, logger, spec, l, cred, rr)
		}
		if err := checkExecutable(iso, l.path); err != nil {
			return nil, err
		}
		if err := l.pushEnv(ctx); err != nil {
			return nil, err
		}
		p, err := startRelayed(ctx, logger, spec, l, cred, rr)
		if err != nil {
			l.dropEnv(ctx)
			return nil, isolationHint(err, iso, spec.Dir)
		}
		p.launch = l
		return p, nil
	}
	if err := checkExecutable(iso, l.path); err != nil {
		return nil, err
	}
	if err := l.pushEnv(ctx); err != nil {
		return nil, err
	}
	cmd := exec.Command(l.path, l.args...)
	cmd.Dir = l.dir
	cmd.Env = l.env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	setProcAttr(cmd)
	setCredential(cmd, cred)
	cmd.WaitDelay = waitDelay
	p := &Process{
		logger: logger.With("bin", spec.Bin),
		cmd:    cmd,
		launch: l,
	}
	p.stderr = &tailBuffer{max: MaxStderrBytes, logger: p.logger, mask: l.mask}
	cmd.Stderr = p.stderr
	if spec.Stdin {
		w, err := cmd.StdinPipe()
		if err != nil {
			l.dropEnv(ctx)
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		p.stdin = w
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		l.dropEnv(ctx)
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	p.stdout = out
	growPipe(out)
	if err := cmd.Start(); err != nil {
		l.dropEnv(ctx)
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: %w", agent.ErrNotInstalled, spec.Bin, err)
		}
		return nil, isolationHint(fmt.Errorf("start %s: %w", spec.Bin, err), iso, spec.Dir)
	}
	p.logger = p.logger.With("pid", cmd.Process.Pid)
	p.logger.Debug("process started", "args", len(spec.Args), "dir", spec.Dir)
	return p, nil
}

// Pid is the child's process id.
func (p *Process) Pid() int {
	if p.relay != nil {
		return p.relay.childPid
	}
	return p.cmd.Process.Pid
}

// WriteLine writes line plus a newline (unless it already ends in one) to the
// child's stdin. Writes are serialized.
func (p *Process) WriteLine(line []byte) error {
	if p.relay != nil {
		if len(line) == 0 || line[len(line)-1] != '\n' {
			line = append(append(make([]byte, 0, len(line)+1), line...), '\n')
		}
		return p.relay.writeLine(line)
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return ErrStdinClosed
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		buf := make([]byte, 0, len(line)+1)
		line = append(append(buf, line...), '\n')
	}
	if _, err := p.stdin.Write(line); err != nil {
		return fmt.Errorf("write stdin: %w", err)
	}
	return nil
}

// CloseStdin closes the child's stdin (EOF for the child). It is idempotent.
func (p *Process) CloseStdin() error {
	if p.relay != nil {
		return p.relay.closeStdin()
	}
	p.stdinMu.Lock()
	defer p.stdinMu.Unlock()
	if p.stdin == nil {
		return nil
	}
	err := p.stdin.Close()
	p.stdin = nil
	return err
}

// Signal sends sig to the child.
func (p *Process) Signal(sig os.Signal) error {
	if p.relay != nil {
		return p.relay.signal(sig)
	}
	return p.cmd.Process.Signal(sig)
}

// Kill kills the child and, where supported, its process group.
func (p *Process) Kill() error {
	if p.relay != nil {
		return p.relay.kill()
	}
	return killTree(p.cmd)
}

// Stderr returns the captured stderr tail so far.
func (p *Process) Stderr() string {
	if p.relay != nil {
		return p.relay.stderr()
	}
	return p.stderr.String()
}

// Each reads stdout line by line until EOF and calls handle for every
// non-empty line (without its line ending). The slice is only valid during
// the call. A handler error is logged with a bounded excerpt and the line is
// skipped. A line longer than MaxLineBytes is logged and discarded up to its
// newline. Each returns nil at EOF and the read error otherwise.
//
// A relayed process reads its journal instead; after a detach Each returns
// ErrDetached.
func (p *Process) Each(handle func(line []byte) error) error {
	return p.readStdout(func(r io.Reader) error {
		return eachLine(bufio.NewReaderSize(r, readBufferBytes), MaxLineBytes, p.logger, handle)
	})
}

// readStdout runs read over the child's stdout or, for a relayed process,
// over its journal as it grows (ErrDetached after a detach that read did
// not see the end of). A Process's stdout is read once.
func (p *Process) readStdout(read func(io.Reader) error) error {
	if p.relay != nil {
		return p.relay.follow(read)
	}
	return read(p.stdout)
}

// readBufferBytes is the size of Each's read buffer.
const readBufferBytes = 64 << 10

// eachLine reads r line by line with Each's limits.
func eachLine(r *bufio.Reader, max int, logger *slog.Logger, handle func([]byte) error) error {
	var (
		buf       []byte
		discard   bool
		discarded int
	)
	for {
		chunk, err := r.ReadSlice('\n')
		complete := err == nil
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) && !errors.Is(err, io.EOF) {
			return err
		}
		if discard {
			discarded += len(chunk)
		} else if contentLen(buf, chunk, complete) > max {
			discard, discarded = true, len(buf)+len(chunk)
			buf = buf[:0]
		} else if complete && len(buf) == 0 {
			// Fast path: the whole line is in the reader's buffer.
			handleLine(chunk, logger, handle)
			continue
		} else {
			buf = append(buf, chunk...)
		}
		if complete || errors.Is(err, io.EOF) {
			if discard {
				logger.Warn("stdout line too long, discarded", "bytes", discarded, "max", max)
				discard, discarded = false, 0
			} else if len(buf) > 0 {
				handleLine(buf, logger, handle)
			}
			buf = buf[:0]
			if cap(buf) > 1<<20 {
				buf = nil // do not keep a huge buffer around
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
	}
}

// contentLen is the length of buf+chunk without its line ending (\n, \r\n, or
// a trailing \r that may still be followed by \n).
func contentLen(buf, chunk []byte, complete bool) int {
	n := len(buf) + len(chunk)
	at := func(i int) byte { // i-th byte from the end, 1-based
		if i <= len(chunk) {
			return chunk[len(chunk)-i]
		}
		return buf[len(buf)-(i-len(chunk))]
	}
	if complete {
		n--
		if n > 0 && at(2) == '\r' {
			n--
		}
	} else if n > 0 && at(1) == '\r' {
		n--
	}
	return n
}

func handleLine(line []byte, logger *slog.Logger, handle func([]byte) error) {
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if err := handle(line); err != nil {
		logger.Warn("stdout line skipped", "err", err, "bytes", len(line), "excerpt", Excerpt(line, excerptBytes))
	}
}

// Excerpt returns at most max bytes of b as a string, marking a cut.
func Excerpt(b []byte, max int) string {
	if len(b) <= max {
		return string(b)
	}
	return string(b[:max]) + "…"
}

// Wait waits for the child to exit, after Each returned. It returns nil on
// exit status 0 and a *ProcessError otherwise (ErrDetached after a detach).
// It is idempotent.
func (p *Process) Wait() error {
	if p.relay != nil {
		err := p.relay.wait()
		p.dropEnvAfter(err)
		return err
	}
	defer func() { p.dropEnvAfter(p.waitErr) }()
	p.waitOnce.Do(func() {
		err := p.cmd.Wait()
		_ = p.CloseStdin()
		p.stderr.flush()
		if err == nil {
			p.logger.Debug("process exited")
			return
		}
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		p.logger.Debug("process exited", "exit_code", code, "err", err)
		p.waitErr = &ProcessError{ExitCode: code, Stderr: p.stderr.String(), Err: err}
	})
	return p.waitErr
}

// dropEnvAfter removes a container run's env file once the run ended
// unsuccessfully (err a *ProcessError): `lxc exec` may have started and
// ended (refused, killed, the instance stopping) before the in-container
// script removed it. The removal is idempotent (rm -f) and done once; a
// successful exit means the script ran and removed it.
func (p *Process) dropEnvAfter(err error) {
	var pe *ProcessError
	if p.launch.container == nil || !errors.As(err, &pe) {
		return
	}
	p.dropOnce.Do(func() { p.launch.dropEnv(context.Background()) })
}

// checkExecutable refuses an isolated launch of an executable the agent
// user could change (see Isolation.CheckExecutable).
func checkExecutable(iso *Isolation, path string) error {
	if iso == nil {
		return nil
	}
	return iso.CheckExecutable(path)
}

// tailBuffer keeps the last max bytes written and logs each complete line.
// mask, when set, hides secret values in what it logs and returns.
type tailBuffer struct {
	mu     sync.Mutex
	max    int
	buf    []byte
	line   []byte
	logger *slog.Logger
	mask   func(string) string
}

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	rest := b
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if room := maxStderrLine - len(t.line); room > 0 {
				t.line = append(t.line, rest[:min(room, len(rest))]...)
			}
			break
		}
		if room := maxStderrLine - len(t.line); room > 0 {
			t.line = append(t.line, rest[:min(room, i)]...)
		}
		t.logLine()
		rest = rest[i+1:]
	}
	return len(b), nil
}

func (t *tailBuffer) logLine() {
	if l := bytes.TrimSpace(t.line); len(l) > 0 {
		t.logger.Debug("stderr", "line", t.masked(Excerpt(l, 4096)))
	}
	t.line = t.line[:0]
}

func (t *tailBuffer) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.logLine()
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.masked(string(t.buf))
}

func (t *tailBuffer) masked(s string) string {
	if t.mask == nil {
		return s
	}
	return t.mask(s)
}
