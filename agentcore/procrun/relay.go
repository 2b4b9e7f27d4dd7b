// The relay: a detached process that owns an agent CLI so that the agent
// survives a restart of the bot.
//
// # Relay protocol
//
// A run that carries a RelayRun in its context (WithRelay) has its first
// process started under a relay instead of as the bot's child. The relay is a
// separate executable invocation (Relay.Command plus the run's directory, for
// the bot `threadline relay DIR`) started in its own session (setsid), so a
// SIGKILL of the bot or of its process group leaves it and the agent running.
//
// The run's directory (Relay.Dir/<run id>, mode 0700, as Relay.Dir itself)
// holds:
//
//	out        the agent's stdout (the journal), byte for byte except that
//	           every secret value of the launch's Mask (the bot's configured
//	           secrets and the run's project secrets, raw or JSON-escaped) is
//	           replaced by redact.Mask in each line before the line is
//	           written (a JSON line stays valid JSON, see scrub.go)
//	sock       a unix socket (0600) for control requests (one JSON object per
//	           line); the relay serves only peers of its own uid or root
//	           (SO_PEERCRED) and closes any other connection, and answers
//	           only requests that carry its token
//	token      the relay's random token (0600): a sandboxed agent of the
//	           bot's own uid (host.isolation: sandbox without a uid switch)
//	           can name a relay's socket (relay command lines are in /proc)
//	           but cannot read this file, so it cannot steer another run
//	meta.json  run id, relay and agent pids, start time
//	exit.json  written once stdout is fully journaled and the agent exited:
//	           exit code, stdin writes, masked stderr tail
//	relay.log  the relay's own log (never arguments, environment or stdin)
//	note.json  what the run's owner needs to rebuild the run (SetNote; no secrets)
//
// The launch (executable, arguments, environment with any project secrets,
// the secret values to mask) is handed to the relay over its stdin pipe and
// never written to disk. The user an isolated agent runs as is not part of
// it: the bot names its configured agent user (host.user) on the relay's
// command line (`relay --agent-user NAME DIR`), and the relay looks the
// user up itself and refuses root, its own uid, a member of the lxd group
// and a relay that may not switch users (NewIsolation). Nothing the relay
// reads can make it start a program as any other user. The relay keeps the
// bot's uid, makes itself non-dumpable (SetNotDumpable) and starts the agent
// as that user. A relay of an isolated run
// started by a non-root bot gets CAP_SETUID, CAP_SETGID (to start the agent
// as the agent user) and CAP_KILL (to signal it) as ambient capabilities,
// clears its ambient set at once (DropInheritedCaps), and so holds them
// while the agent gets none; stdin
// writes are counted, not journaled, so that secret answers never reach the
// directory. Control requests: write (one stdin line), close_stdin, signal,
// kill and status (stdin writes so far, agent pid, stderr tail).
//
// The bot's side reads the journal file directly, following it until
// exit.json appears, so a reader never misses a line and the relay may exit
// as soon as its agent did. Reattaching after a restart reads the journal
// from offset 0 and suppresses the first K stdin writes (K = writes the relay
// already performed): a deterministic provider replayed over the same stdout
// re-issues the same writes, and the prompt service drops the events it had
// already persisted. Detach stops reading without touching the agent.
//
// The directory is removed by its owner (RemoveRelay) once the run's end is
// persisted.

package procrun

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Relay directory entries.
const (
	relayOut  = "out"
	relaySock = "sock"
	relayMeta = "meta.json"
	relayExit = "exit.json"
	relayLog  = "relay.log"
	relayNote = "note.json"
	relayTok  = "token"
)

// Errors of relayed processes.
var (
	// ErrDetached is returned by Each and Wait of a process whose RelayRun was
	// detached: the agent keeps running under its relay.
	ErrDetached = errors.New("procrun: detached from relay")
	// ErrRelayGone is returned when a run to reattach has no relay directory,
	// or one whose relay died before its agent's exit was recorded.
	ErrRelayGone = errors.New("procrun: relay gone")
)

// relayLaunch is what the bot hands the relay on its stdin.
type relayLaunch struct {
	RunID string   `json:"run_id"`
	Path  string   `json:"path"`
	Args  []string `json:"args"`
	Dir   string   `json:"dir"`
	Env   []string `json:"env"`
	Stdin bool     `json:"stdin"`
	// Mask are secret values hidden in the journal and the stderr tail.
	Mask []string `json:"mask,omitempty"`
	// Isolated says the agent runs as the relay's --agent-user: a launch
	// that asks for it from a relay started without one is refused, and a
	// relay started with one runs no launch as its own user.
	Isolated bool `json:"isolated,omitempty"`
}

// relayFlagAgentUser names the agent user on a relay's command line.
const relayFlagAgentUser = "--agent-user"

// relayArgs are a relay's command-line arguments (after "relay"):
// [--agent-user NAME] DIR.
func relayArgs(args []string) (dir, agentUser string, err error) {
	switch {
	case len(args) == 1:
		return args[0], "", nil
	case len(args) == 3 && args[0] == relayFlagAgentUser && args[1] != "":
		return args[2], args[1], nil
	}
	return "", "", errors.New("usage: relay [--agent-user NAME] DIR (started by threadline itself)")
}

// relayCredential is the credential the relay's agent starts with: the
// agent user's (looked up by this process, never taken from the launch),
// or none for a relay started without --agent-user.
func relayCredential(agentUser string, isolated bool) (*credential, error) {
	switch {
	case agentUser == "" && isolated:
		return nil, errors.New("an isolated launch needs a relay started with --agent-user")
	case agentUser == "" && !isolated:
		return nil, nil
	case !isolated:
		return nil, fmt.Errorf("a relay for agent user %s runs no launch as its own user", agentUser)
	}
	iso, err := NewIsolation(agentUser)
	if err != nil {
		return nil, err
	}
	return &credential{User: iso.User, UID: iso.UID, GID: iso.GID, Groups: iso.Groups}, nil
}

// relayMetaFile is meta.json.
type relayMetaFile struct {
	RunID     string    `json:"run_id"`
	RelayPid  int       `json:"relay_pid"`
	ChildPid  int       `json:"child_pid"`
	StartedAt time.Time `json:"started_at"`
}

// relayExitFile is exit.json.
type relayExitFile struct {
	// Code is the exit status, -1 when the agent was killed by a signal.
	Code   int    `json:"code"`
	Err    string `json:"err,omitempty"`
	Writes int    `json:"writes"`
	Stderr string `json:"stderr,omitempty"`
}

// relayRequest is one control request.
type relayRequest struct {
	Op     string `json:"op"` // write, close_stdin, signal, kill, status
	Token  string `json:"token"`
	Line   []byte `json:"line,omitempty"`
	Signal int    `json:"signal,omitempty"`
}

// relayReply answers one control request.
type relayReply struct {
	Err      string `json:"err,omitempty"`
	Closed   bool   `json:"closed,omitempty"` // stdin is closed
	Writes   int    `json:"writes"`
	ChildPid int    `json:"child_pid"`
	Stderr   string `json:"stderr,omitempty"`
}

// RunRelay is the relay process's main: args are its command-line
// arguments after "relay" ([--agent-user NAME] DIR). It reads the launch
// from stdin, starts the agent, journals its stdout into DIR and serves
// control requests on DIR/sock until the agent exited and its exit is
// recorded. It reports "ok" (or the start error) as one line on out, after
// which it never writes to out again. logger should write to DIR/relay.log.
func RunRelay(ctx context.Context, args []string, in io.Reader, out io.Writer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	dir, agentUser, err := relayArgs(args)
	if err != nil {
		return reportStart(out, err)
	}
	err = runRelay(ctx, dir, agentUser, in, out, logger)
	if err != nil {
		logger.Error("relay", "err", err)
	}
	return err
}

func runRelay(ctx context.Context, dir, agentUser string, in io.Reader, out io.Writer, logger *slog.Logger) error {
	// Never with privileges granted by the executable's file (set-uid, file
	// capabilities): anyone who may execute it would have them.
	if err := CheckNotPrivilegedExec(); err != nil {
		return reportStart(out, fmt.Errorf("relay: %w", err))
	}
	if err := SetNotDumpable(); err != nil {
		logger.Warn("relay: cannot make the process non-dumpable", "err", err)
	}
	// The relay of an isolated run holds CAP_SETUID, CAP_SETGID and CAP_KILL
	// as ambient capabilities (relayCaps): it keeps them, the agent gets none.
	if err := DropInheritedCaps(); err != nil {
		return reportStart(out, fmt.Errorf("relay: %w", err))
	}
	var l relayLaunch
	line, err := bufio.NewReader(in).ReadBytes('\n')
	if err != nil {
		return reportStart(out, fmt.Errorf("read launch: %w", err))
	}
	if err := json.Unmarshal(line, &l); err != nil {
		return reportStart(out, fmt.Errorf("decode launch: %w", err))
	}
	cred, err := relayCredential(agentUser, l.Isolated)
	if err != nil {
		return reportStart(out, fmt.Errorf("relay: %w", err))
	}
	journal, err := os.OpenFile(filepath.Join(dir, relayOut), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return reportStart(out, fmt.Errorf("journal: %w", err))
	}
	defer journal.Close()
	ln, err := net.Listen("unix", filepath.Join(dir, relaySock))
	if err != nil {
		return reportStart(out, fmt.Errorf("listen: %w", err))
	}
	defer ln.Close()
	if err := os.Chmod(filepath.Join(dir, relaySock), 0o600); err != nil {
		return reportStart(out, fmt.Errorf("socket mode: %w", err))
	}

	token, err := newRelayToken(dir)
	if err != nil {
		return reportStart(out, fmt.Errorf("token: %w", err))
	}
	r := &relay{logger: logger, allow: ownerOnly, token: token}
	cmd := exec.Command(l.Path, l.Args...)
	cmd.Dir, cmd.Env = l.Dir, l.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	setProcAttr(cmd)
	setCredential(cmd, cred)
	r.stderr = &tailBuffer{max: MaxStderrBytes, logger: slog.New(slog.DiscardHandler), mask: masker(l.Mask)}
	cmd.Stderr = r.stderr
	if l.Stdin {
		if r.stdin, err = cmd.StdinPipe(); err != nil {
			return reportStart(out, fmt.Errorf("stdin pipe: %w", err))
		}
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return reportStart(out, fmt.Errorf("stdout pipe: %w", err))
	}
	if err := cmd.Start(); err != nil {
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			return reportStart(out, fmt.Errorf("not installed: %w", err))
		}
		return reportStart(out, fmt.Errorf("start: %w", err))
	}
	r.cmd = cmd
	meta, _ := json.Marshal(relayMetaFile{RunID: l.RunID, RelayPid: os.Getpid(), ChildPid: cmd.Process.Pid, StartedAt: time.Now().UTC()})
	if err := writeFileAtomic(filepath.Join(dir, relayMeta), meta); err != nil {
		logger.Warn("write meta", "err", err)
	}
	logger.Info("agent started", "run_id", l.RunID, "pid", cmd.Process.Pid)
	if err := reportStart(out, nil); err != nil {
		logger.Warn("report start", "err", err) // the bot died meanwhile; carry on
	}

	go r.serve(ln)
	copyErr := copyScrubbed(journal, stdout, newScrubber(l.Mask))
	waitErr := cmd.Wait()
	ex := relayExitFile{Code: 0, Writes: r.writes(), Stderr: r.stderr.String()}
	if waitErr != nil {
		ex.Code, ex.Err = -1, waitErr.Error()
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			ex.Code = ee.ExitCode()
		}
	}
	if copyErr != nil {
		logger.Warn("journal stdout", "err", copyErr)
	}
	if err := journal.Sync(); err != nil {
		logger.Warn("sync journal", "err", err)
	}
	b, _ := json.Marshal(ex)
	if err := writeFileAtomic(filepath.Join(dir, relayExit), b); err != nil {
		return fmt.Errorf("write exit: %w", err)
	}
	logger.Info("agent exited", "run_id", l.RunID, "code", ex.Code, "writes", ex.Writes)
	return nil
}

// reportStart writes the start handshake line.
func reportStart(out io.Writer, err error) error {
	msg := "ok\n"
	if err != nil {
		msg = "error: " + err.Error() + "\n"
	}
	if _, werr := io.WriteString(out, msg); werr != nil && err == nil {
		return werr
	}
	return err
}

// relay is the relay process's state.
type relay struct {
	logger *slog.Logger
	// allow decides whether a connected peer may send requests; token is
	// what each request must carry.
	allow  func(c net.Conn) error
	token  string
	cmd    *exec.Cmd
	stderr *tailBuffer

	mu      sync.Mutex
	stdin   io.WriteCloser // nil when closed or absent
	nwrites int
}

func (r *relay) writes() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nwrites
}

func (r *relay) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go r.conn(c)
	}
}

func (r *relay) conn(c net.Conn) {
	defer c.Close()
	if err := r.allow(c); err != nil {
		r.logger.Warn("relay: connection refused", "err", err)
		return
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(nil, MaxLineBytes+1<<20)
	enc := json.NewEncoder(c)
	for sc.Scan() {
		var req relayRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			_ = enc.Encode(relayReply{Err: "bad request"})
			continue
		}
		if subtle.ConstantTimeCompare([]byte(req.Token), []byte(r.token)) != 1 {
			r.logger.Warn("relay: request without its token refused")
			_ = enc.Encode(relayReply{Err: "unauthorized"})
			return
		}
		if err := enc.Encode(r.handle(req)); err != nil {
			return
		}
	}
}

func (r *relay) handle(req relayRequest) relayReply {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := relayReply{ChildPid: r.cmd.Process.Pid}
	switch req.Op {
	case "write":
		if r.stdin == nil {
			rep.Closed = true
			break
		}
		if _, err := r.stdin.Write(req.Line); err != nil {
			rep.Err = err.Error()
			break
		}
		r.nwrites++
	case "close_stdin":
		if r.stdin != nil {
			if err := r.stdin.Close(); err != nil {
				rep.Err = err.Error()
			}
			r.stdin = nil
		}
	case "signal":
		if err := r.cmd.Process.Signal(syscall.Signal(req.Signal)); err != nil {
			rep.Err = err.Error()
		}
	case "kill":
		if err := killTree(r.cmd); err != nil {
			rep.Err = err.Error()
		}
	case "status":
		rep.Stderr = r.stderr.String()
	default:
		rep.Err = "unknown op " + req.Op
	}
	rep.Writes = r.nwrites
	rep.Closed = rep.Closed || r.stdin == nil
	return rep
}

// newRelayToken writes a new random token to dir/token (0600) and returns it.
func newRelayToken(dir string) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	if err := writeFileAtomic(filepath.Join(dir, relayTok), []byte(tok)); err != nil {
		return "", err
	}
	return tok, nil
}

// masker hides the given secret values.
func masker(values []string) func(string) string {
	if len(values) == 0 {
		return nil
	}
	secrets := make([]agent.EnvVar, len(values))
	for i, v := range values {
		secrets[i] = agent.EnvVar{Value: v}
	}
	return secretMasker(secrets)
}

// writeFileAtomic writes b to path through a temporary file and a rename.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// mkdirPrivate creates dir and its missing parents with mode 0700, whatever
// the umask, and makes dir itself 0700.
func mkdirPrivate(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return os.Chmod(dir, 0o700)
	}
	if parent := filepath.Dir(dir); parent != dir {
		if _, err := os.Stat(parent); errors.Is(err, os.ErrNotExist) {
			if err := mkdirPrivate(parent); err != nil {
				return err
			}
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return os.Chmod(dir, 0o700)
}

// containerSecrets are the values of spec's project secrets.
func containerSecrets(spec Spec) []string {
	if spec.Container == nil {
		return nil
	}
	out := make([]string, 0, len(spec.Container.Secrets))
	for _, s := range spec.Container.Secrets {
		out = append(out, s.Value)
	}
	return out
}
