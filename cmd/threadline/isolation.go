// Isolation of host agents from the bot: the host section of the config, the
// start-up checks of serve, chat and run, and the provider wrapper that starts
// host agents as the agent user in their own working directories.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/chatops"
)

var _ chatops.WorkFiles = (*app)(nil)

// Isolation modes (host.isolation).
const (
	isolationAuto    = "auto"
	isolationUID     = "uid"
	isolationSandbox = "sandbox"
	isolationOff     = "off"
)

// defaultAgentUser is host.user's default.
const defaultAgentUser = "threadline-agent"

// createAgentUser is the command that creates the default agent user.
const createAgentUser = "useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent"

// errUnisolated marks host agents that would run as the bot's own user.
var errUnisolated = errors.New("host agents are not isolated")

func (h HostConfig) validate() error {
	switch h.Isolation {
	case "", isolationAuto, isolationUID, isolationOff:
	case isolationSandbox:
		return errors.New("host.isolation: sandbox is not available in this build; use uid (a dedicated agent user, see README \"Isolation\") or off")
	default:
		return fmt.Errorf("host.isolation: %q must be auto, uid or off", h.Isolation)
	}
	if strings.ContainsAny(h.User, ":/ ") {
		return fmt.Errorf("host.user: %q is not a user name", h.User)
	}
	return nil
}

func (h HostConfig) user() string {
	if h.User == "" {
		return defaultAgentUser
	}
	return h.User
}

func (h HostConfig) mode() string {
	if h.Isolation == "" {
		return isolationAuto
	}
	return h.Isolation
}

// hostIsolation resolves the config's host section. It returns the isolation
// of host agents; nil and nil errors when host.isolation is off; nil and
// unisolated (why) when auto found no isolation possible; and err when uid
// was asked for and is not possible.
func hostIsolation(h HostConfig) (iso *procrun.Isolation, unisolated, err error) {
	if h.mode() == isolationOff {
		return nil, nil, nil
	}
	iso, err = procrun.NewIsolation(h.user())
	switch {
	case err == nil:
		return iso, nil, nil
	case h.mode() == isolationUID:
		return nil, nil, fmt.Errorf("host.isolation: uid: %w", err)
	default:
		return nil, err, nil
	}
}

// startHost prepares this process for serve, chat or run: it makes the
// process non-dumpable, removes from its environment the variables the
// config took secrets from, and resolves the isolation of host agents. serve
// (strict) refuses to run unisolated unless host.isolation is off; chat and
// run warn once on stderr and go on.
func startHost(cfg *Config, strict bool, stderr io.Writer) (*procrun.Isolation, error) {
	if err := procrun.SetNotDumpable(); err != nil {
		fmt.Fprintf(stderr, "threadline: warning: %v\n", err)
	}
	unsetSecretEnv(cfg)
	iso, why, err := hostIsolation(cfg.Host)
	switch {
	case err != nil:
		return nil, err
	case why == nil:
		return iso, nil
	case strict:
		return nil, fmt.Errorf("%w: they would run as the bot's own user and could read its environment, config, database and other runs' relays (%w).\n"+
			"Create the agent user (the bot must be root or hold CAP_SETUID and CAP_SETGID, as configs/threadline.service grants):\n  %s\n"+
			"or set host.isolation: off to run agents unisolated knowingly", errUnisolated, why, createAgentUser)
	default:
		fmt.Fprintf(stderr, "threadline: warning: agents run as your own user, unisolated (%v); set host.isolation: off to silence this\n", why)
		return nil, nil
	}
}

// workRoot is the parent of the chats' own working directories: the
// config's workdir, else <data dir>/work (as the front desk uses).
func workRoot(cfg *Config) string {
	if cfg.Workdir != "" {
		return cfg.Workdir
	}
	dir, err := dataDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "work")
}

// withIsolation runs host agents under iso (nil: unchanged); workRoot is
// the parent of the chats' own working directories (<workRoot>/<chat id>),
// which are handed to the agent user.
func withIsolation(iso *procrun.Isolation, workRoot string) appOption {
	return func(o *appOptions) {
		o.isolation, o.workRoot = iso, workRoot
	}
}

// isolated wraps each provider so that its host runs start as iso's user.
func isolated(providers []agent.Provider, iso *procrun.Isolation, workRoot string) []agent.Provider {
	if iso == nil {
		return providers
	}
	out := make([]agent.Provider, len(providers))
	for i, p := range providers {
		out[i] = &isolatedProvider{Provider: p, iso: iso, workRoot: workRoot}
	}
	return out
}

// isolatedProvider starts a provider's host runs as the agent user; project
// runs (Container set) are left to their container.
type isolatedProvider struct {
	agent.Provider
	iso      *procrun.Isolation
	workRoot string
}

// Run hands the chat's own working directory to the agent user and runs the
// turn with the isolation in its context.
func (p *isolatedProvider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if req.Container != nil {
		return p.Provider.Run(ctx, req, emit)
	}
	if err := prepareWorkdir(p.workRoot, req.Cwd, p.iso); err != nil {
		emit(agent.Event{Type: agent.EventRunFailed, Text: "Working directory: " + err.Error()})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
	}
	return p.Provider.Run(procrun.WithIsolation(ctx, p.iso), req, emit)
}

// workdirMode is a chat's own working directory under isolation: owned by
// the agent user, group the bot's (set-group-id, so that what is created in
// it keeps that group), rwx for both, nothing for others. The bot can then
// add attached files after the agent's first run (workFiles), and nobody
// else can enter.
const workdirMode = os.ModeSetgid | 0o770

// prepareWorkdir gives a chat's own working directory (a direct child of
// root, created by the bot) to the agent user (workdirMode, group the bot's
// effective group), and makes root and the directories above it that the
// bot owns traversable (o+x, never listable for that). Any other cwd is the
// operator's choice and is left as it is: the agent user must be able to
// use it. The directory is changed through one descriptor opened without
// following a symbolic link. A bot that is not root needs CAP_CHOWN (the
// unit grants it) and changes the mode while it still owns the directory;
// taking one over from an earlier layout, it also hands the regular files
// it owns at the top (attachments saved before) to the agent user.
func prepareWorkdir(root, cwd string, iso *procrun.Isolation) error {
	if root == "" || cwd == "" {
		return nil
	}
	root, cwd = filepath.Clean(root), filepath.Clean(cwd)
	if filepath.Dir(cwd) != root {
		return nil
	}
	if err := traversable(root); err != nil {
		return err
	}
	botUID, botGID := os.Geteuid(), os.Getegid()
	// A directory of an earlier layout (the agent's, 0700) cannot even be
	// opened by a bot that is not root: take it back first. Lchown follows
	// no link, and root is the bot's, so nobody else can swap cwd.
	if fi, err := os.Lstat(cwd); err == nil && fi.IsDir() {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != botUID && int(st.Uid) == int(iso.UID) && fi.Mode() != os.ModeDir|workdirMode {
			if err := os.Lchown(cwd, botUID, botGID); err != nil {
				return fmt.Errorf("hand %s to %s: %w", cwd, iso.User, err)
			}
		}
	}
	dir, err := openDirNoFollow(cwd)
	if err != nil {
		return err
	}
	defer dir.Close()
	fi, err := dir.Stat()
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner information", cwd)
	}
	if st.Uid == iso.UID && int(st.Gid) == botGID && fi.Mode() == os.ModeDir|workdirMode {
		return nil
	}
	hand := func(err error) error { return fmt.Errorf("hand %s to %s: %w", cwd, iso.User, err) }
	if int(st.Uid) != botUID { // an earlier layout: take it back to change its mode
		if err := dir.Chown(botUID, botGID); err != nil {
			return hand(err)
		}
	}
	if err := dir.Chmod(workdirMode); err != nil {
		return hand(err)
	}
	if err := dir.Chown(int(iso.UID), botGID); err != nil {
		return hand(err)
	}
	return handFiles(dir, iso)
}

// openDirNoFollow opens the directory path itself, never a symbolic link.
func openDirNoFollow(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// handFiles gives the regular files of dir (top level) that this process
// owns to the agent user, mode 0600: attachments saved by an earlier layout.
func handFiles(dir *os.File, iso *procrun.Isolation) error {
	names, err := dir.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		fd, err := unix.Openat(int(dir.Fd()), n, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // a symbolic link, or gone
		}
		f := os.NewFile(uintptr(fd), n)
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) == os.Geteuid() {
				err = f.Chmod(0o600)
				if err == nil {
					err = f.Chown(int(iso.UID), -1)
				}
				if err != nil {
					f.Close()
					return fmt.Errorf("hand %s to %s: %w", filepath.Join(dir.Name(), n), iso.User, err)
				}
			}
		}
		f.Close()
	}
	return nil
}

// workFiles creates the files the bot saves into chats' working directories
// (chatops.WorkFiles) so that the agent user can use them.
type workFiles struct {
	// iso is the agents' isolation; nil creates plain files of this process.
	iso  *procrun.Isolation
	root string
}

// CreateWorkFile creates name in dir, exclusively and without following a
// symbolic link (relative to dir opened without following one either: an
// agent could have planted links in its directory). Under isolation the
// chat's own directory is prepared first (prepareWorkdir), and the file is
// given to the agent user with mode 0600; the returned handle, opened by
// the bot, stays writable.
func (w workFiles) CreateWorkFile(dir, name string) (io.WriteCloser, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("bad file name %q", name)
	}
	mode := uint32(0o640)
	if w.iso != nil {
		if err := prepareWorkdir(w.root, dir, w.iso); err != nil {
			return nil, err
		}
		mode = 0o600
	}
	d, err := openDirNoFollow(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	path := filepath.Join(dir, name)
	fd, err := unix.Openat(int(d.Fd()), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	if w.iso == nil {
		return f, nil
	}
	err = f.Chmod(os.FileMode(mode))
	if err == nil {
		err = f.Chown(int(w.iso.UID), -1) // its group is the directory's (set-group-id)
	}
	if err != nil {
		f.Close()
		_ = unix.Unlinkat(int(d.Fd()), name, 0)
		return nil, fmt.Errorf("hand %s to %s: %w", path, w.iso.User, err)
	}
	return f, nil
}

// CreateWorkFile answers chatops.WorkFiles for the front desk.
func (a *app) CreateWorkFile(dir, name string) (io.WriteCloser, error) {
	return a.files.CreateWorkFile(dir, name)
}

// traversable adds o+x to dir and each directory above it that this
// process owns, so that the agent user can reach its working directory
// (without listing anything). A directory of another owner must already be.
func traversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		if mode&0o001 == 0 {
			st, ok := fi.Sys().(*syscall.Stat_t)
			if !ok || int(st.Uid) != os.Geteuid() {
				return fmt.Errorf("the agent user cannot enter %s (mode %o, another owner): chmod o+x it or choose another workdir", d, mode)
			}
			if err := os.Chmod(d, mode|0o001); err != nil {
				return err
			}
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// envRefsOf lists the variables a raw config references as ${VAR}.
func envRefsOf(raw []byte) []string {
	var out []string
	for _, m := range envRef.FindAllSubmatch(raw, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// unsetSecretEnv removes from this process's environment every variable the
// config took a secret from (its value holds a configured secret), so that
// the bot does not keep them once the config is loaded. The initial
// environment block of /proc/<pid>/environ still shows them: the process
// being non-dumpable is what keeps other processes from reading it.
func unsetSecretEnv(cfg *Config) {
	secrets := cfg.secrets()
	for _, name := range cfg.envRefs {
		v, ok := os.LookupEnv(name)
		if !ok {
			continue
		}
		for _, s := range secrets {
			if len(s) >= 4 && strings.Contains(v, s) {
				_ = os.Unsetenv(name)
				break
			}
		}
	}
}
