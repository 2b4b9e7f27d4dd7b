package workspace

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Defaults of Options.
const (
	DefaultTimeout       = 2 * time.Minute
	DefaultCloneTimeout  = 30 * time.Minute
	DefaultName          = "Threadline"
	DefaultEmail         = "threadline@localhost"
	DefaultMaxImportSize = 4 << 30 // bytes of one Import's pack
)

// waitDelay bounds how long a killed git's pipes are waited for.
const waitDelay = 5 * time.Second

// stderrMax is how much of a git call's stderr is kept (its tail).
const stderrMax = 32 << 10

// Options configures the runner every git call goes through.
type Options struct {
	// Git is the git executable; "" is "git" from PATH.
	Git string
	// Timeout bounds every git call but a clone; 0 is DefaultTimeout.
	Timeout time.Duration
	// CloneTimeout bounds Clone; 0 is DefaultCloneTimeout.
	CloneTimeout time.Duration
	// Name and Email are the bot's identity: the committer of every commit
	// (Commit, the rebase of Merge) and the author when CommitOptions names
	// none. "" is DefaultName, DefaultEmail.
	Name, Email string
	// GlobalConfig is GIT_CONFIG_GLOBAL of the bot's calls; "" is /dev/null
	// (no global config). The agent's calls never read one. The system
	// config is never read.
	GlobalConfig string
	// Config is extra git configuration ("key=value") given to every call
	// of the bot's (in a main clone) at command scope. The agent's calls do
	// not get it.
	Config []string
	// Env is extra environment for the bot's calls, set last (e.g. PATH,
	// GIT_SSH_COMMAND="ssh -i KEY", SSH_AUTH_SOCK). The bot's own GIT_*
	// variables are never passed on; do not set GIT_CONFIG_* here, use
	// Config. The agent's calls get none of it but PATH.
	Env []string
	// Cmd, when set, sees each of the bot's git commands (those in a main
	// clone) before it starts. Setpgid is set after it. The agent's calls
	// go through Worktree.Agent instead.
	Cmd func(*exec.Cmd)
	// RequireAgent refuses to run git in a chat clone (or a spare) whose
	// Agent hook is nil, instead of running it as the bot: set it whenever
	// agents run isolated, so that a forgotten hook is an error, never the
	// bot running git in a repository an agent wrote.
	RequireAgent bool
	// MakeDir makes an empty directory for a chat clone or a spare that the
	// agent's side may write (as the caller prepares a chat's working
	// directory: owned by the agent user). It is called only when the
	// directory does not exist. nil is os.MkdirAll(dir, 0o755) as the bot,
	// right when agents run as the bot's own user.
	MakeDir func(ctx context.Context, dir string) error
	// RemoveDir deletes a chat clone's or a spare's directory and all in it
	// (files the agent user owns, which a bot that is not root may not
	// delete itself). nil is os.RemoveAll.
	RemoveDir func(ctx context.Context, dir string) error
	// MaxImportSize bounds the pack of one Import (git index-pack
	// --max-input-size); 0 is DefaultMaxImportSize.
	MaxImportSize int64
	// Logger gets one debug line per git call; nil is slog.Default().
	Logger *slog.Logger
}

// fixedEnv makes git non-interactive and predictable: no prompt, no pager,
// no editor, C locale, no system config, no optional index writes (status).
var fixedEnv = []string{
	"GIT_TERMINAL_PROMPT=0",
	"GIT_CONFIG_NOSYSTEM=1",
	"GIT_OPTIONAL_LOCKS=0",
	"GIT_PAGER=cat",
	"PAGER=cat",
	"GIT_EDITOR=true",
	"GIT_SEQUENCE_EDITOR=true",
	"GIT_MERGE_AUTOEDIT=no",
	"LC_ALL=C",
	"LANGUAGE=C",
	// Above core.sshCommand, which a repository's config could point at
	// any program; set GIT_SSH_COMMAND in Options.Env for another ssh.
	"GIT_SSH_COMMAND=ssh",
}

// fixedConfig is command-scope configuration of every call, on both sides.
// It turns off what would run a program the repository names (hooks,
// fsmonitor, credential helpers, askpass, signing) and keeps garbage
// collection in the foreground (a detached gc would outlive the call's
// process group). On the bot's side it is defence in depth: the bot runs
// git only in main clones, whose configuration is its own. On the agent's
// side it keeps the bot's operations (Commit, the rebase of Merge)
// predictable; what still runs there (a clean filter) runs as the agent.
var fixedConfig = []string{
	"core.hooksPath=/dev/null",
	"core.fsmonitor=false",
	"core.excludesFile=/dev/null",
	"core.attributesFile=/dev/null",
	"core.pager=cat",
	"color.ui=false",
	"credential.helper=",
	"core.askPass=",
	"commit.gpgSign=false",
	"tag.gpgSign=false",
	"gc.autoDetach=false",
	"protocol.ext.allow=never",
	"advice.detachedHead=false",
}

// Git owns every git operation of the workspaces: the main clones, the
// chats' clones and their shipping. It is safe for concurrent use; git's
// own locks order calls on one repository.
type Git struct {
	bin           string
	timeout       time.Duration
	cloneTimeout  time.Duration
	name, email   string
	baseEnv       []string // the bot's calls: its environment without GIT_*, then fixedEnv
	agentEnv      []string // the agent's calls: PATH and fixedEnv only
	config        []string // the bot's calls
	extraEnv      []string
	hook          func(*exec.Cmd)
	requireAgent  bool
	makeDir       func(context.Context, string) error
	removeDir     func(context.Context, string) error
	maxImportSize int64
	log           *slog.Logger

	snapLocks sync.Map // chat dir → *sync.Mutex: one Snapshot at a time per chat
	gitDirs   sync.Map // main dir → its git directory
}

// New returns the runner with opt's settings and their defaults.
func New(opt Options) *Git {
	g := &Git{
		bin:           cmp.Or(opt.Git, "git"),
		timeout:       cmp.Or(opt.Timeout, DefaultTimeout),
		cloneTimeout:  cmp.Or(opt.CloneTimeout, DefaultCloneTimeout),
		name:          cmp.Or(opt.Name, DefaultName),
		email:         cmp.Or(opt.Email, DefaultEmail),
		config:        slices.Concat(fixedConfig, opt.Config),
		extraEnv:      slices.Clone(opt.Env),
		hook:          opt.Cmd,
		requireAgent:  opt.RequireAgent,
		makeDir:       opt.MakeDir,
		removeDir:     opt.RemoveDir,
		maxImportSize: cmp.Or(opt.MaxImportSize, DefaultMaxImportSize),
		log:           cmp.Or(opt.Logger, slog.Default()),
	}
	if g.makeDir == nil {
		g.makeDir = func(_ context.Context, dir string) error { return os.MkdirAll(dir, 0o755) }
	}
	if g.removeDir == nil {
		g.removeDir = func(_ context.Context, dir string) error { return os.RemoveAll(dir) }
	}
	path := os.Getenv("PATH")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			g.baseEnv = append(g.baseEnv, kv)
		}
	}
	for _, kv := range opt.Env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = p
		}
	}
	g.baseEnv = append(g.baseEnv, fixedEnv...)
	g.baseEnv = append(g.baseEnv, "GIT_CONFIG_GLOBAL="+cmp.Or(opt.GlobalConfig, os.DevNull))
	g.agentEnv = append([]string{"PATH=" + path}, fixedEnv...)
	g.agentEnv = append(g.agentEnv, "GIT_CONFIG_GLOBAL="+os.DevNull)
	return g
}

// repo is a repository git runs in, and on whose side: the bot's (a main
// clone, Options.Cmd) or an agent's (a chat clone or a spare, its Agent
// hook). Every git call goes through one, so that no call can run in a
// chat clone as the bot by accident: bot(dir) is for main clones only,
// agent(...) for the rest.
type repo struct {
	g     *Git
	dir   string          // where git runs
	agent bool            // the agent's side
	hook  func(*exec.Cmd) // Options.Cmd, or the chat's Agent
}

// bot is the main clone (or loose repository) at dir, on the bot's side.
func (g *Git) bot(dir string) repo { return repo{g: g, dir: dir, hook: g.hook} }

// agentRepo is the chat clone or spare at dir, on the agent's side: git
// runs through hook (nil: as the bot, unless Options.RequireAgent).
func (g *Git) agentRepo(dir string, hook func(*exec.Cmd)) (repo, error) {
	if hook == nil && g.requireAgent {
		return repo{}, invalid("no Agent hook for %s: git is never run in a chat's clone as the bot", dir)
	}
	return repo{g: g, dir: dir, agent: true, hook: hook}, nil
}

// chat is wt's clone, on the agent's side.
func (g *Git) chat(wt Worktree) (repo, error) {
	if err := wt.check(); err != nil {
		return repo{}, err
	}
	return g.agentRepo(filepath.Clean(wt.Dir), wt.Agent)
}

// call is one git invocation.
type call struct {
	args    []string
	stdin   io.Reader
	env     []string      // variables of this call (GIT_INDEX_FILE, identity)
	config  []string      // command-scope config of this call ("key=value")
	secrets []string      // values removed from any error text
	timeout time.Duration // 0: the runner's Timeout
}

// run runs git args in r and returns its stdout without the trailing
// newline.
func (r repo) run(ctx context.Context, args ...string) (string, error) {
	out, err := r.exec(ctx, call{args: args})
	return strings.TrimRight(string(out), "\n"), err
}

// test runs a git command whose exit status is an answer: 0 is true, 1 is
// false (with nothing on stderr), anything else an error.
func (r repo) test(ctx context.Context, args ...string) (bool, error) {
	_, err := r.exec(ctx, call{args: args})
	if err == nil {
		return true, nil
	}
	if ge, ok := errors.AsType[*GitError](err); ok && ge.Code == 1 && ge.Err == nil && ge.Stderr == "" {
		return false, nil
	}
	return false, err
}

// exec runs one git call in r under its time limit and returns its stdout
// (also when it failed, for callers that read git's report, like push).
func (r repo) exec(ctx context.Context, c call) ([]byte, error) {
	limit := cmp.Or(c.timeout, r.g.timeout)
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := r.command(cctx, c)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: stderrMax}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	err := cmd.Run()
	r.logCall(ctx, c, start, err)
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w", c.args[0], ctx.Err())
	}
	return stdout.Bytes(), r.failure(c, err, scrub(stderr.String(), c.secrets), cctx.Err() != nil)
}

// logCall writes the debug line of one call.
func (r repo) logCall(ctx context.Context, c call, start time.Time, err error) {
	by := "bot"
	if r.agent {
		by = "agent"
	}
	r.g.log.DebugContext(ctx, "git", logkey.Args, c.args, logkey.Dir, r.dir, logkey.By, by,
		logkey.Took, time.Since(start), logkey.Err, err)
}

// command builds the exec.Cmd of c: environment, the side's hook, process
// group, kill on cancel.
func (r repo) command(ctx context.Context, c call) *exec.Cmd {
	cmd := exec.CommandContext(ctx, r.g.bin, c.args...)
	cmd.Dir = r.dir
	cmd.Stdin = c.stdin
	cmd.Env = r.environ(c)
	if r.hook != nil {
		r.hook(cmd)
	}
	setProcGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// environ is c's environment. The bot's side: the bot's environment
// (without GIT_*), the fixed variables, the configuration as
// GIT_CONFIG_COUNT/KEY/VALUE (never on the command line), c's own
// variables, then Options.Env. The agent's side: PATH, the fixed
// variables, no global config, a ceiling above the chat's directory (git
// never looks for a repository above it), the fixed configuration and c's
// variables: nothing of the bot's environment, which may hold secrets.
func (r repo) environ(c call) []string {
	base, config, extra := r.g.baseEnv, slices.Concat(r.g.config, c.config), r.g.extraEnv
	if r.agent {
		base, config, extra = r.g.agentEnv, slices.Concat(fixedConfig, c.config), nil
		if r.dir != "" {
			base = append(slices.Clip(base), "GIT_CEILING_DIRECTORIES="+filepath.Dir(r.dir))
		}
	}
	env := make([]string, 0, len(base)+2*len(config)+len(c.env)+len(extra)+1)
	env = append(env, base...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+k, "GIT_CONFIG_VALUE_"+n+"="+v)
	}
	env = append(env, c.env...)
	return append(env, extra...)
}

// failure turns a failed call into a *GitError, recognizing the outcomes
// every command shares.
func (r repo) failure(c call, err error, stderr string, timedOut bool) error {
	ge := &GitError{Args: c.args, Dir: r.dir, Code: -1, Stderr: stderr}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		ge.Code = ee.ExitCode()
	} else if !timedOut {
		ge.Stderr = err.Error() // git did not start
	}
	ge.Err = recognize(stderr, timedOut)
	return ge
}

// recognize tells the outcome git's stderr says.
func recognize(stderr string, timedOut bool) error {
	switch {
	case timedOut:
		return ErrTimeout
	case strings.Contains(stderr, "detected dubious ownership"):
		return ErrUnsafeRepo
	case strings.Contains(stderr, "not a git repository"):
		return ErrNotRepo
	case strings.Contains(stderr, ".lock': File exists"):
		return ErrLocked
	case isAuthFailure(stderr):
		return ErrAuth
	}
	return nil
}

// isAuthFailure tells git's ways of saying the remote refused who we are.
func isAuthFailure(stderr string) bool {
	for _, s := range []string{
		"Authentication failed",
		"could not read Username",
		"could not read Password",
		"Permission denied (publickey",
		"The requested URL returned error: 401",
		"The requested URL returned error: 403",
	} {
		if strings.Contains(stderr, s) {
			return true
		}
	}
	return false
}

// pipe runs src's call with its stdout going into dst's call (one kernel
// pipe), both under one time limit: when either fails or the limit passes,
// both are killed with everything they started. It returns dst's stdout.
// A failure is src's when src failed (dst then only saw its input end).
func (g *Git) pipe(ctx context.Context, src repo, sc call, dst repo, dc call) ([]byte, error) {
	cctx, cancel := context.WithTimeout(ctx, cmp.Or(dc.timeout, g.timeout))
	defer cancel()
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	scmd, dcmd := src.command(cctx, sc), dst.command(cctx, dc)
	var out bytes.Buffer
	serr, derr := &tailBuffer{max: stderrMax}, &tailBuffer{max: stderrMax}
	scmd.Stdout, scmd.Stderr = pw, serr
	dcmd.Stdin, dcmd.Stdout, dcmd.Stderr = pr, &out, derr
	start := time.Now()
	if err := dcmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, dst.failure(dc, err, "", false)
	}
	pr.Close()
	if err := scmd.Start(); err != nil {
		pw.Close()
		cancel()
		dcmd.Wait()
		return nil, src.failure(sc, err, "", false)
	}
	pw.Close()
	sdone := make(chan error, 1)
	go func() {
		err := scmd.Wait()
		if err != nil {
			cancel() // dst would wait for input that never comes
		}
		sdone <- err
	}()
	dErr := dcmd.Wait()
	if dErr != nil {
		cancel()
	}
	sErr := <-sdone
	src.logCall(ctx, sc, start, sErr)
	dst.logCall(ctx, dc, start, dErr)
	timedOut := errors.Is(cctx.Err(), context.DeadlineExceeded)
	switch {
	case sErr == nil && dErr == nil:
		return out.Bytes(), nil
	case ctx.Err() != nil:
		return out.Bytes(), fmt.Errorf("git %s: %w", sc.args[0], ctx.Err())
	case sErr != nil && (dErr == nil || !killed(sErr) || timedOut):
		// src failed on its own, or did not end in time (dst only waited
		// for it); one killed otherwise (by the pipe, or the kill after dst
		// failed) says nothing dst's error does not.
		return out.Bytes(), src.failure(sc, sErr, scrub(serr.String(), sc.secrets), timedOut)
	}
	return out.Bytes(), dst.failure(dc, dErr, scrub(derr.String(), dc.secrets), timedOut)
}

// killed tells a process that ended on a signal.
func killed(err error) bool {
	ee, ok := errors.AsType[*exec.ExitError](err)
	return ok && ee.ExitCode() == -1
}

// scrub replaces every secret in s.
func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		if v != "" {
			s = strings.ReplaceAll(s, v, "[redacted]")
		}
	}
	return s
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// isObjectID tells whether s is a full object id (SHA-1 or SHA-256),
// lowercase hex: what the agent's side reports is checked with it before
// the bot uses it.
func isObjectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
