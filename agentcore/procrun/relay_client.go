// The bot's side of the relay: starting, reattaching, following the journal,
// control requests and detaching. See relay.go for the protocol.

package procrun

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

const (
	// relayStartTimeout bounds the relay's start handshake.
	relayStartTimeout = 15 * time.Second
	// followPoll is the longest pause between two looks at a journal that
	// has not grown.
	followPoll = 25 * time.Millisecond
	// maxSocketPath is the longest unix socket path Linux accepts.
	maxSocketPath = 107
)

// Relay says where and how relays are started.
type Relay struct {
	// Dir holds one directory per relayed run.
	Dir string
	// Command starts a relay process; the run's directory is appended. For
	// the bot: its own executable and "relay".
	Command []string
	// Env is the relay process's own environment (nil: empty). The agent's
	// environment comes from the Spec.
	Env []string
	// Mask are secret values (the bot's configured secrets) that the relay
	// hides in the journal (redact.Mask) and the stderr tail ("***"), besides
	// the run's project secrets.
	Mask []string
}

// Run returns the relay claim of a new run.
func (r Relay) Run(runID string) *RelayRun { return &RelayRun{relay: r, runID: runID} }

// Reattach returns the claim of a run whose relay was started by an earlier
// process: Start follows that relay from the start of its journal instead
// of launching anything, and suppresses the stdin writes it already made.
func (r Relay) Reattach(runID string) *RelayRun {
	return &RelayRun{relay: r, runID: runID, reattach: true}
}

// RunDir is the directory of the run's relay.
func (r Relay) RunDir(runID string) string { return filepath.Join(r.Dir, runID) }

// RelayRun is one run's claim on a relay, carried in the context given to the
// provider (WithRelay). The first process the run starts with procrun.Start
// runs under the relay; later ones (rare) are the bot's own children.
type RelayRun struct {
	relay    Relay
	runID    string
	reattach bool

	mu       sync.Mutex
	claimed  bool
	detached bool
	proc     *relayProc
	note     []byte
}

// SetNote sets what the relay directory keeps for the run's owner besides the
// journal (note.json): what a later process needs to rebuild the run. It must
// hold no secret. Call it before the run's Start.
func (rr *RelayRun) SetNote(b []byte) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	rr.note = b
}

// Note returns the note the run's relay was started with.
func (r Relay) Note(runID string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(r.RunDir(runID), relayNote))
	if err != nil {
		return nil, fmt.Errorf("%w: run %s: %w", ErrRelayGone, runID, err)
	}
	return b, nil
}

// Reset forgets the run's relayed process and removes its directory, so
// that the next Start of the run is relayed afresh (a retry of the turn).
// It does nothing after Detach.
func (rr *RelayRun) Reset() error {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.detached || !rr.claimed {
		return nil
	}
	rr.claimed, rr.proc, rr.reattach = false, nil, false
	return RemoveRelay(rr.relay.Dir, rr.runID)
}

type relayKey struct{}

// WithRelay returns ctx carrying rr, for Start.
func WithRelay(ctx context.Context, rr *RelayRun) context.Context {
	return context.WithValue(ctx, relayKey{}, rr)
}

func relayOf(ctx context.Context) *RelayRun {
	rr, _ := ctx.Value(relayKey{}).(*RelayRun)
	return rr
}

func (rr *RelayRun) claim() bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.claimed || rr.detached {
		return false
	}
	rr.claimed = true
	return true
}

// Relayed reports whether a process of the run runs under the relay.
func (rr *RelayRun) Relayed() bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.proc != nil
}

// Detach stops following the relayed process without touching it: its Each
// and Wait return ErrDetached, writes return ErrDetached, Signal and Kill do
// nothing. The agent keeps running under its relay for a later Reattach. It
// reports whether there was a relayed process; without one, later Starts of
// the run are not relayed.
func (rr *RelayRun) Detach() bool {
	rr.mu.Lock()
	rr.detached = true
	p := rr.proc
	rr.mu.Unlock()
	if p == nil {
		return false
	}
	p.detach()
	return true
}

// Detached reports whether Detach was called.
func (rr *RelayRun) Detached() bool {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	return rr.detached
}

// Remove deletes the run's relay directory; call it once the run's end is
// persisted. A missing directory is not an error.
func (rr *RelayRun) Remove() error { return RemoveRelay(rr.relay.Dir, rr.runID) }

// RemoveRelay deletes the relay directory of runID under dir.
func RemoveRelay(dir, runID string) error {
	if runID == "" || strings.ContainsAny(runID, `/\`) || runID == "." || runID == ".." {
		return fmt.Errorf("procrun: invalid run id %q", runID)
	}
	return os.RemoveAll(filepath.Join(dir, runID))
}

// RelayState is what ListRelays found of one run's relay.
type RelayState struct {
	RunID string
	// Live: the relay answers; its agent may still be running.
	Live bool
	// Exited: the agent exited and its whole output is journaled.
	Exited bool
}

// Reattachable reports whether a Reattach can replay the run to its end or to
// the live agent.
func (s RelayState) Reattachable() bool { return s.Live || s.Exited }

// ListRelays returns the relays under dir. A missing dir has none.
func ListRelays(dir string) ([]RelayState, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("procrun: list relays: %w", err)
	}
	var out []RelayState
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		d := filepath.Join(dir, e.Name())
		st := RelayState{RunID: e.Name()}
		if _, err := os.Stat(filepath.Join(d, relayExit)); err == nil {
			st.Exited = true
		} else if c, err := net.DialTimeout("unix", filepath.Join(d, relaySock), time.Second); err == nil {
			_ = c.Close()
			st.Live = true
		}
		out = append(out, st)
	}
	return out, nil
}

// startRelayed starts (or, for a reattach, finds) the run's relay for spec.
func startRelayed(ctx context.Context, logger *slog.Logger, spec Spec, l launch, cred *credential, rr *RelayRun) (*Process, error) {
	dir := rr.relay.RunDir(rr.runID)
	if rr.runID == "" || filepath.Base(dir) != rr.runID {
		return nil, fmt.Errorf("procrun: invalid relay run id %q", rr.runID)
	}
	if n := len(filepath.Join(dir, relaySock)); n > maxSocketPath {
		return nil, fmt.Errorf("procrun: relay socket path is %d bytes, longer than %d: use a shorter relay directory", n, maxSocketPath)
	}
	mask := append(append([]string(nil), rr.relay.Mask...), containerSecrets(spec)...)
	rp := &relayProc{
		rr: rr, dir: dir, mask: masker(mask),
		logger:   logger.With("bin", spec.Bin, "relay", dir),
		detached: make(chan struct{}),
	}
	var err error
	if rr.reattach {
		err = rp.attach()
	} else {
		err = rp.launch(ctx, spec, l, cred, mask)
	}
	if err != nil {
		return nil, err
	}
	rr.mu.Lock()
	rr.proc = rp
	detached := rr.detached
	rr.mu.Unlock()
	if detached {
		rp.detach()
	}
	rp.logger = rp.logger.With("pid", rp.childPid)
	rp.logger.Debug("relayed process", "reattach", rr.reattach, "suppressed_writes", rp.suppress)
	return &Process{logger: rp.logger, relay: rp}, nil
}

// relayProc is a Process whose child runs under a relay.
type relayProc struct {
	rr       *RelayRun
	dir      string
	logger   *slog.Logger
	mask     func(string) string
	childPid int

	mu       sync.Mutex // serializes control requests
	conn     net.Conn
	rd       *bufio.Reader
	token    string // the relay's (its directory's token file)
	suppress int    // stdin writes still to skip (reattach)
	closed   bool   // stdin closed

	detached   chan struct{}
	detachOnce sync.Once

	waitOnce sync.Once
	waitErr  error
	exit     *relayExitFile
}

func (rp *relayProc) launch(ctx context.Context, spec Spec, l launch, cred *credential, mask []string) error {
	cmdline := rp.rr.relay.Command
	if len(cmdline) == 0 {
		return errors.New("procrun: relay command not configured")
	}
	if err := mkdirPrivate(rp.rr.relay.Dir); err != nil {
		return fmt.Errorf("procrun: relay dir: %w", err)
	}
	if err := os.Mkdir(rp.dir, 0o700); err != nil {
		return fmt.Errorf("procrun: relay dir of run %s: %w", rp.rr.runID, err)
	}
	if err := os.Chmod(rp.dir, 0o700); err != nil {
		_ = os.RemoveAll(rp.dir)
		return fmt.Errorf("procrun: relay dir of run %s: %w", rp.rr.runID, err)
	}
	fail := func(err error) error {
		_ = os.RemoveAll(rp.dir)
		return err
	}
	rp.rr.mu.Lock()
	note := rp.rr.note
	rp.rr.mu.Unlock()
	if note != nil {
		if err := os.WriteFile(filepath.Join(rp.dir, relayNote), note, 0o600); err != nil {
			return fail(fmt.Errorf("procrun: relay note: %w", err))
		}
	}
	logf, err := os.OpenFile(filepath.Join(rp.dir, relayLog), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fail(fmt.Errorf("procrun: relay log: %w", err))
	}
	defer logf.Close()
	args := cmdline[1:len(cmdline):len(cmdline)]
	if cred != nil { // the relay looks the user up itself (relayCredential)
		args = append(args, relayFlagAgentUser, cred.User)
	}
	cmd := exec.Command(cmdline[0], append(args, rp.dir)...)
	cmd.Env = rp.rr.relay.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.Stderr = logf
	setRelayAttr(cmd)
	setAmbientCaps(cmd, relayCaps(cred))
	in, err := cmd.StdinPipe()
	if err != nil {
		return fail(fmt.Errorf("procrun: relay stdin: %w", err))
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fail(fmt.Errorf("procrun: relay stdout: %w", err))
	}
	if err := cmd.Start(); err != nil {
		return fail(fmt.Errorf("procrun: start relay: %w", err))
	}
	go func() { _ = cmd.Wait() }() // reap it should it end while we live
	b, _ := json.Marshal(relayLaunch{RunID: rp.rr.runID, Path: l.path, Args: l.args, Dir: l.dir, Env: l.env, Stdin: spec.Stdin, Mask: mask, Isolated: cred != nil})
	_, werr := in.Write(append(b, '\n'))
	_ = in.Close()
	hello := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		hello <- strings.TrimSpace(line)
	}()
	var reply string
	t := time.NewTimer(relayStartTimeout)
	defer t.Stop()
	select {
	case reply = <-hello:
	case <-t.C:
		reply = "error: no answer from the relay"
	case <-ctx.Done():
		reply = "error: " + ctx.Err().Error()
	}
	_ = out.Close()
	if reply != "ok" {
		_ = cmd.Process.Kill()
		if werr != nil && reply == "" {
			reply = werr.Error()
		}
		msg := strings.TrimPrefix(reply, "error: ")
		if strings.HasPrefix(msg, "not installed") {
			return fail(fmt.Errorf("%w: %s: %s", agent.ErrNotInstalled, spec.Bin, msg))
		}
		return fail(fmt.Errorf("procrun: relay of %s: %s", spec.Bin, msg))
	}
	var meta relayMetaFile
	if b, err := os.ReadFile(filepath.Join(rp.dir, relayMeta)); err == nil {
		_ = json.Unmarshal(b, &meta)
	}
	rp.childPid = meta.ChildPid
	return nil
}

// attach finds the run's existing relay: a live one tells how many stdin
// writes it made; an exited one recorded them.
func (rp *relayProc) attach() error {
	if _, err := os.Stat(rp.dir); err != nil {
		return fmt.Errorf("%w: run %s: %w", ErrRelayGone, rp.rr.runID, err)
	}
	var meta relayMetaFile
	if b, err := os.ReadFile(filepath.Join(rp.dir, relayMeta)); err == nil {
		_ = json.Unmarshal(b, &meta)
	}
	rp.childPid = meta.ChildPid
	rep, err := rp.request(relayRequest{Op: "status"})
	if err == nil {
		rp.suppress, rp.closed = rep.Writes, rep.Closed
		return nil
	}
	ex, xerr := rp.readExit()
	if xerr != nil {
		return fmt.Errorf("%w: run %s: %w", ErrRelayGone, rp.rr.runID, err)
	}
	rp.suppress, rp.closed = ex.Writes, true
	return nil
}

// request sends one control request; the caller must not hold rp.mu.
func (rp *relayProc) request(req relayRequest) (relayReply, error) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	return rp.requestLocked(req)
}

func (rp *relayProc) requestLocked(req relayRequest) (relayReply, error) {
	if rp.conn == nil {
		tok, err := os.ReadFile(filepath.Join(rp.dir, relayTok))
		if err != nil {
			return relayReply{}, fmt.Errorf("relay: %w", err)
		}
		c, err := net.DialTimeout("unix", filepath.Join(rp.dir, relaySock), 5*time.Second)
		if err != nil {
			return relayReply{}, fmt.Errorf("relay: %w", err)
		}
		rp.conn, rp.rd, rp.token = c, bufio.NewReader(c), string(tok)
	}
	req.Token = rp.token
	b, _ := json.Marshal(req)
	_ = rp.conn.SetDeadline(time.Now().Add(30 * time.Second))
	var rep relayReply
	_, err := rp.conn.Write(append(b, '\n'))
	if err == nil {
		var line []byte
		if line, err = rp.rd.ReadBytes('\n'); err == nil {
			err = json.Unmarshal(line, &rep)
		}
	}
	if err != nil {
		_ = rp.conn.Close()
		rp.conn, rp.rd = nil, nil
		return relayReply{}, fmt.Errorf("relay: %w", err)
	}
	if rep.Err != "" {
		return rep, fmt.Errorf("relay: %s", rep.Err)
	}
	return rep, nil
}

func (rp *relayProc) isDetached() bool {
	select {
	case <-rp.detached:
		return true
	default:
		return false
	}
}

func (rp *relayProc) detach() {
	rp.detachOnce.Do(func() {
		close(rp.detached)
		rp.mu.Lock()
		if rp.conn != nil {
			_ = rp.conn.Close()
			rp.conn, rp.rd = nil, nil
		}
		rp.mu.Unlock()
		rp.logger.Info("detached from relay")
	})
}

func (rp *relayProc) writeLine(line []byte) error {
	if rp.isDetached() {
		return ErrDetached
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.suppress > 0 {
		rp.suppress-- // the relay wrote it before the restart
		return nil
	}
	if rp.closed {
		return ErrStdinClosed
	}
	rep, err := rp.requestLocked(relayRequest{Op: "write", Line: line})
	switch {
	case rep.Closed && err == nil:
		rp.closed = true
		return ErrStdinClosed
	case err != nil && rp.exited():
		rp.closed = true
		return ErrStdinClosed
	case err != nil:
		return fmt.Errorf("write stdin: %w", err)
	}
	return nil
}

func (rp *relayProc) closeStdin() error {
	if rp.isDetached() {
		return nil
	}
	rp.mu.Lock()
	defer rp.mu.Unlock()
	if rp.closed {
		return nil
	}
	rp.closed = true
	if _, err := rp.requestLocked(relayRequest{Op: "close_stdin"}); err != nil && !rp.exited() {
		return err
	}
	return nil
}

func (rp *relayProc) signal(sig os.Signal) error {
	if rp.isDetached() || rp.exited() {
		return nil
	}
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("procrun: unsupported signal %v", sig)
	}
	_, err := rp.request(relayRequest{Op: "signal", Signal: int(s)})
	return err
}

func (rp *relayProc) kill() error {
	if rp.isDetached() || rp.exited() {
		return nil
	}
	_, err := rp.request(relayRequest{Op: "kill"})
	if err != nil && rp.exited() {
		return nil
	}
	return err
}

func (rp *relayProc) stderr() string {
	if ex, err := rp.readExit(); err == nil {
		return rp.masked(ex.Stderr)
	}
	rep, err := rp.request(relayRequest{Op: "status"})
	if err != nil {
		return ""
	}
	return rp.masked(rep.Stderr)
}

func (rp *relayProc) masked(s string) string {
	if rp.mask == nil {
		return s
	}
	return rp.mask(s)
}

// exited reports whether the relay recorded the agent's exit.
func (rp *relayProc) exited() bool {
	_, err := os.Stat(filepath.Join(rp.dir, relayExit))
	return err == nil
}

func (rp *relayProc) readExit() (relayExitFile, error) {
	var ex relayExitFile
	b, err := os.ReadFile(filepath.Join(rp.dir, relayExit))
	if err != nil {
		return ex, err
	}
	return ex, json.Unmarshal(b, &ex)
}

// follow runs read over the journal from its start, as it grows, until the
// agent's exit is recorded and every journaled byte was read.
func (rp *relayProc) follow(read func(io.Reader) error) error {
	f, err := os.Open(filepath.Join(rp.dir, relayOut))
	if err != nil {
		if rp.isDetached() {
			return ErrDetached
		}
		return fmt.Errorf("%w: journal: %w", ErrRelayGone, err)
	}
	defer f.Close()
	fr := &follower{f: f, rp: rp}
	err = read(fr)
	if err == nil && rp.isDetached() && !fr.done {
		return ErrDetached
	}
	return err
}

// wait waits for the exit record.
func (rp *relayProc) wait() error {
	rp.waitOnce.Do(func() {
		delay := time.Millisecond
		for {
			ex, err := rp.readExit()
			if err == nil {
				rp.exit = &ex
				break
			}
			if !errors.Is(err, os.ErrNotExist) {
				rp.waitErr = fmt.Errorf("procrun: relay exit record: %w", err)
				return
			}
			if !rp.alive() {
				// The relay died without recording the exit: the agent's end is unknown.
				if _, err := rp.readExit(); err != nil {
					rp.waitErr = &ProcessError{ExitCode: -1, Err: fmt.Errorf("%w: it stopped before the agent exited", ErrRelayGone)}
					return
				}
				continue
			}
			select {
			case <-rp.detached:
				rp.waitErr = ErrDetached
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, followPoll)
		}
		rp.mu.Lock()
		rp.closed = true
		if rp.conn != nil {
			_ = rp.conn.Close()
			rp.conn, rp.rd = nil, nil
		}
		rp.mu.Unlock()
		if rp.exit.Code == 0 && rp.exit.Err == "" {
			rp.logger.Debug("process exited")
			return
		}
		err := errors.New(rp.exit.Err)
		if rp.exit.Err == "" {
			err = fmt.Errorf("exit status %d", rp.exit.Code)
		}
		rp.logger.Debug("process exited", "exit_code", rp.exit.Code, "err", err)
		rp.waitErr = &ProcessError{ExitCode: rp.exit.Code, Stderr: rp.masked(rp.exit.Stderr), Err: err}
	})
	if rp.waitErr == nil && rp.exit == nil {
		return ErrDetached
	}
	return rp.waitErr
}

// alive reports whether the relay's socket answers.
func (rp *relayProc) alive() bool {
	c, err := net.DialTimeout("unix", filepath.Join(rp.dir, relaySock), time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}

// follower reads a growing journal: at its end it waits for more until the
// agent's exit is recorded (then reads what is left and reports io.EOF), the
// relay disappears, or the process is detached.
type follower struct {
	f     *os.File
	rp    *relayProc
	done  bool // exit recorded: the journal is complete
	idle  time.Duration
	probe int
}

func (fr *follower) Read(p []byte) (int, error) {
	for {
		n, err := fr.f.Read(p)
		if n > 0 {
			fr.idle = 0
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if fr.done {
			return 0, io.EOF
		}
		if fr.rp.exited() {
			fr.done = true // read once more: the journal was complete before exit.json
			continue
		}
		if fr.rp.isDetached() {
			return 0, io.EOF
		}
		fr.idle = min(max(2*fr.idle, time.Millisecond), followPoll)
		if fr.probe++; fr.probe%200 == 0 && !fr.rp.alive() && !fr.rp.exited() {
			return 0, fmt.Errorf("%w: it stopped before the agent exited", ErrRelayGone)
		}
		select {
		case <-fr.rp.detached:
		case <-time.After(fr.idle):
		}
	}
}
