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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Defaults of Options.
const (
	DefaultTimeout      = 2 * time.Minute
	DefaultCloneTimeout = 30 * time.Minute
	DefaultName         = "Threadline"
	DefaultEmail        = "threadline@localhost"
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
	// GlobalConfig is GIT_CONFIG_GLOBAL; "" is /dev/null (no global config).
	// The system config is never read.
	GlobalConfig string
	// Config is extra git configuration ("key=value") given to every call at
	// command scope (above the repositories' own), e.g. "safe.directory=*"
	// when the worktrees belong to the agent's user.
	Config []string
	// Env is extra environment for every call, set last (e.g. PATH,
	// GIT_SSH_COMMAND="ssh -i KEY", SSH_AUTH_SOCK). The bot's own GIT_*
	// variables are never passed on; do not set GIT_CONFIG_* here, use Config.
	Env []string
	// Cmd, when set, sees each git command before it starts, e.g. to run git
	// as the agent's user (SysProcAttr.Credential). Setpgid is set after it.
	Cmd func(*exec.Cmd)
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

// fixedConfig is command-scope configuration of every call. It turns off
// what would run a program the repository names (hooks, fsmonitor,
// credential helpers, askpass, signing), so that a bot's git call does not
// run code a chat's agent wrote into its worktree or hooks, and keeps
// garbage collection in the foreground (a detached gc would outlive the
// call's process group). It cannot cover every program a repository's
// config may name (filter drivers, remote.*.uploadpack): the main clone's
// .git/config must not be writable by the agent's user.
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

// Git owns every git operation of the workspaces: the main clones, the chats'
// worktrees and their shipping. It is safe for concurrent use; git's own
// locks order calls on one repository.
type Git struct {
	bin          string
	timeout      time.Duration
	cloneTimeout time.Duration
	name, email  string
	baseEnv      []string // the bot's environment without GIT_*, then fixedEnv
	config       []string
	extraEnv     []string
	hook         func(*exec.Cmd)
	log          *slog.Logger
}

// New returns the runner with opt's settings and their defaults.
func New(opt Options) *Git {
	g := &Git{
		bin:          cmp.Or(opt.Git, "git"),
		timeout:      cmp.Or(opt.Timeout, DefaultTimeout),
		cloneTimeout: cmp.Or(opt.CloneTimeout, DefaultCloneTimeout),
		name:         cmp.Or(opt.Name, DefaultName),
		email:        cmp.Or(opt.Email, DefaultEmail),
		config:       slices.Concat(fixedConfig, opt.Config),
		extraEnv:     slices.Clone(opt.Env),
		hook:         opt.Cmd,
		log:          cmp.Or(opt.Logger, slog.Default()),
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			g.baseEnv = append(g.baseEnv, kv)
		}
	}
	g.baseEnv = append(g.baseEnv, fixedEnv...)
	g.baseEnv = append(g.baseEnv, "GIT_CONFIG_GLOBAL="+cmp.Or(opt.GlobalConfig, os.DevNull))
	return g
}

// call is one git invocation.
type call struct {
	dir     string
	args    []string
	stdin   io.Reader
	env     []string      // variables of this call (GIT_INDEX_FILE, identity)
	config  []string      // command-scope config of this call ("key=value")
	secrets []string      // values removed from any error text
	timeout time.Duration // 0: the runner's Timeout
}

// run runs git args in dir and returns its stdout without the trailing
// newline.
func (g *Git) run(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := g.exec(ctx, call{dir: dir, args: args})
	return strings.TrimRight(string(out), "\n"), err
}

// test runs a git command whose exit status is an answer: 0 is true, 1 is
// false (with nothing on stderr), anything else an error.
func (g *Git) test(ctx context.Context, dir string, args ...string) (bool, error) {
	_, err := g.exec(ctx, call{dir: dir, args: args})
	if err == nil {
		return true, nil
	}
	if ge, ok := errors.AsType[*GitError](err); ok && ge.Code == 1 && ge.Err == nil && ge.Stderr == "" {
		return false, nil
	}
	return false, err
}

// raceRetries is how often a call that met a worktree being added at the
// same time (isAddRace) is tried again.
const raceRetries = 3

// exec runs one git call under its time limit and returns its stdout (also
// when it failed, for callers that read git's report, like push). A call
// that failed on another worktree's half-written administrative files is
// tried again (git checks other worktrees before it changes anything).
func (g *Git) exec(ctx context.Context, c call) ([]byte, error) {
	for try := 1; ; try++ {
		out, err := g.execOnce(ctx, c)
		if ge, ok := errors.AsType[*GitError](err); !ok || !isAddRace(ge.Stderr) || c.stdin != nil || try > raceRetries {
			return out, err
		}
		select {
		case <-ctx.Done():
			return out, err
		case <-time.After(time.Duration(try) * 50 * time.Millisecond):
		}
	}
}

// isAddRace tells git's failure on reading another worktree's files while
// that worktree is being added (an empty commondir or gitdir).
func isAddRace(stderr string) bool {
	return strings.Contains(stderr, "/worktrees/") && strings.Contains(stderr, "failed to read")
}

// execOnce is one try of exec.
func (g *Git) execOnce(ctx context.Context, c call) ([]byte, error) {
	limit := cmp.Or(c.timeout, g.timeout)
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := g.command(cctx, c)
	var stdout bytes.Buffer
	stderr := &tailBuffer{max: stderrMax}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start := time.Now()
	err := cmd.Run()
	g.log.DebugContext(ctx, "git", logkey.Args, c.args, logkey.Dir, c.dir,
		logkey.Took, time.Since(start), logkey.Err, err)
	if err == nil {
		return stdout.Bytes(), nil
	}
	if ctx.Err() != nil {
		return stdout.Bytes(), fmt.Errorf("git %s: %w", c.args[0], ctx.Err())
	}
	return stdout.Bytes(), g.failure(c, err, scrub(stderr.String(), c.secrets), cctx.Err() != nil)
}

// command builds the exec.Cmd of c: environment, process group, kill on
// cancel.
func (g *Git) command(ctx context.Context, c call) *exec.Cmd {
	cmd := exec.CommandContext(ctx, g.bin, c.args...)
	cmd.Dir = c.dir
	cmd.Stdin = c.stdin
	cmd.Env = g.environ(c)
	if g.hook != nil {
		g.hook(cmd)
	}
	setProcGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
	return cmd
}

// environ is c's environment: the bot's (without GIT_*), the fixed
// variables, the configuration as GIT_CONFIG_COUNT/KEY/VALUE (never on the
// command line), c's own variables, then Options.Env.
func (g *Git) environ(c call) []string {
	config := slices.Concat(g.config, c.config)
	env := make([]string, 0, len(g.baseEnv)+2*len(config)+len(c.env)+len(g.extraEnv)+1)
	env = append(env, g.baseEnv...)
	env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(config)))
	for i, kv := range config {
		k, v, _ := strings.Cut(kv, "=")
		n := strconv.Itoa(i)
		env = append(env, "GIT_CONFIG_KEY_"+n+"="+k, "GIT_CONFIG_VALUE_"+n+"="+v)
	}
	env = append(env, c.env...)
	return append(env, g.extraEnv...)
}

// failure turns a failed call into a *GitError, recognizing the outcomes
// every command shares.
func (g *Git) failure(c call, err error, stderr string, timedOut bool) error {
	ge := &GitError{Args: c.args, Dir: c.dir, Code: -1, Stderr: stderr}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		ge.Code = ee.ExitCode()
	} else if !timedOut {
		ge.Stderr = err.Error() // git did not start
	}
	switch {
	case timedOut:
		ge.Err = ErrTimeout
	case strings.Contains(stderr, "detected dubious ownership"):
		ge.Err = ErrUnsafeRepo
	case strings.Contains(stderr, "not a git repository"):
		ge.Err = ErrNotRepo
	case strings.Contains(stderr, ".lock': File exists"):
		ge.Err = ErrLocked
	case isAuthFailure(stderr):
		ge.Err = ErrAuth
	}
	return ge
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
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
