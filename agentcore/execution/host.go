// Host execution under isolation: the provider wrapper that starts host
// agents as the agent user, and the chats' own working directories and
// attached files handed to that user.

package execution

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
)

// HostIsolated wraps each provider so that its host runs (no container)
// start as iso's user in their chat's own working directory, a direct child
// of workRoot (see PrepareWorkdir), and, with sb, confined to it and to the
// chat's agent state (Sandboxing); nil iso and sb return providers unchanged.
func HostIsolated(providers []agent.Provider, iso *procrun.Isolation, sb *Sandboxing, workRoot string) []agent.Provider {
	if iso == nil && sb == nil {
		return providers
	}
	out := make([]agent.Provider, len(providers))
	for i, p := range providers {
		out[i] = &isolatedProvider{Provider: p, iso: iso, sb: sb, workRoot: workRoot}
	}
	return out
}

// isolatedProvider starts a provider's host runs as the agent user and in
// its sandbox; project runs (Container set) are left to their container.
type isolatedProvider struct {
	agent.Provider
	iso      *procrun.Isolation
	sb       *Sandboxing
	workRoot string
}

// Run hands the chat's own working directory to the agent user, readies
// the chat's sandbox and runs the turn with both in its context.
func (p *isolatedProvider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if req.Container != nil {
		return p.Provider.Run(ctx, req, emit)
	}
	if p.iso != nil {
		if err := PrepareWorkdir(p.workRoot, req.Cwd, p.iso); err != nil {
			emit(agent.Event{Type: agent.EventRunFailed, Text: "Working directory: " + err.Error()})
			return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
		}
	}
	if p.sb != nil {
		var err error
		if ctx, req, err = p.sb.confine(ctx, p.ID(), req, p.iso); err != nil {
			emit(agent.Event{Type: agent.EventRunFailed, Text: "Sandbox: " + err.Error()})
			return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
		}
	}
	return p.Provider.Run(procrun.WithIsolation(ctx, p.iso), req, emit)
}

// workdirMode is a chat's own working directory under isolation: owned by
// the agent user, group the bot's (set-group-id, so that what is created in
// it keeps that group), rwx for both, nothing for others. The bot can then
// add attached files after the agent's first run (WorkFiles), and nobody
// else can enter.
const workdirMode = os.ModeSetgid | 0o770

// PrepareWorkdir gives a chat's own working directory (a direct child of
// root, created by the bot) to the agent user (workdirMode, group the bot's
// effective group), and makes root and the directories above it that the
// bot owns traversable (o+x, never listable for that). Any other cwd is the
// operator's choice and is left as it is: the agent user must be able to
// use it. The directory is changed through one descriptor opened without
// following a symbolic link. A bot that is not root needs CAP_CHOWN (the
// unit grants it) and changes the mode while it still owns the directory;
// taking one over from an earlier layout, it also hands the regular files
// it owns at the top (attachments saved before) to the agent user.
func PrepareWorkdir(root, cwd string, iso *procrun.Isolation) error {
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

// WorkFiles creates the files the bot saves into chats' working directories
// (chatops.WorkFiles) so that the agent user can use them.
type WorkFiles struct {
	// Iso is the agents' isolation; nil creates plain files of this process.
	Iso *procrun.Isolation
	// Root is the parent of the chats' own working directories.
	Root string
}

// CreateWorkFile creates name in dir, exclusively and without following a
// symbolic link (relative to dir opened without following one either: an
// agent could have planted links in its directory). Under isolation the
// chat's own directory is prepared first (PrepareWorkdir), and the file is
// given to the agent user with mode 0600; the returned handle, opened by
// the bot, stays writable.
func (w WorkFiles) CreateWorkFile(dir, name string) (io.WriteCloser, error) {
	if name == "" || strings.ContainsAny(name, "/\\") || name == "." || name == ".." {
		return nil, fmt.Errorf("bad file name %q", name)
	}
	mode := uint32(0o640)
	if w.Iso != nil {
		if err := PrepareWorkdir(w.Root, dir, w.Iso); err != nil {
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
	if w.Iso == nil {
		return f, nil
	}
	err = f.Chmod(os.FileMode(mode))
	if err == nil {
		err = f.Chown(int(w.Iso.UID), -1) // its group is the directory's (set-group-id)
	}
	if err != nil {
		f.Close()
		_ = unix.Unlinkat(int(d.Fd()), name, 0)
		return nil, fmt.Errorf("hand %s to %s: %w", path, w.Iso.User, err)
	}
	return f, nil
}

// traversable makes dir, the parent of the chats' own working
// directories, traversable by the agent user (o+x, never listable) when this
// process owns it, and refuses when a directory above it is not already
// traversable: it never changes the mode of a directory above dir (a home
// directory such as /root, whose readable files the agent would then reach).
func traversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm()
		if mode&0o001 == 0 {
			st, ok := fi.Sys().(*syscall.Stat_t)
			if d != dir || !ok || int(st.Uid) != os.Geteuid() {
				return fmt.Errorf("%w: %s (mode %04o) is not traversable by others, and Threadline does not open a directory above the chats' working directories (%s); choose a workdir outside it (as root the default is under /var/lib/threadline), or make it traversable yourself (chmod o+x) if nothing in it may be private", ErrUnreachableWorkdir, d, mode, dir)
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

// ErrUnreachableWorkdir is returned when the agent user cannot reach the
// chats' working directories without a mode change above them.
var ErrUnreachableWorkdir = errors.New("the agent user cannot reach the chats' working directories")
