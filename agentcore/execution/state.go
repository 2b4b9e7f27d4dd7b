// A sandboxed chat's own agent state: its home (HOME, the XDG directories,
// the CLI's state switches), a temporary directory of the run, and copies
// of the shared files the CLI needs (its login, its configuration).

package execution

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// Entries of a chat's state directory (StateRoot/<chat id>).
const (
	stateHome = "home"
	stateTmp  = "tmp"
)

// maxSharedBytes bounds what one run copies from the shared home.
const maxSharedBytes = 64 << 20

// stateKey is the name of a chat's state directory: the chat id, which
// is a uuid (letters, digits, hyphens); anything else (probes: no chat)
// is refused.
var stateKey = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// validStateKey reports whether key names a chat's state directory: at
// most 128 bytes of stateKey.
func validStateKey(key string) bool { return len(key) <= 128 && stateKey.MatchString(key) }

// xdgDirs are the XDG base directories relative to a home.
var xdgDirs = map[string]string{
	"XDG_CONFIG_HOME": ".config",
	"XDG_DATA_HOME":   filepath.Join(".local", "share"),
	"XDG_CACHE_HOME":  ".cache",
	"XDG_STATE_HOME":  filepath.Join(".local", "state"),
}

// ChatState is one chat's agent state on the host.
type ChatState struct {
	// Dir is the chat's state directory, Home and Tmp the run's HOME and
	// TMPDIR inside it.
	Dir, Home, Tmp string
	// Env is the run's environment over the agent's configured one: HOME,
	// TMPDIR, the XDG directories and the CLI's state switches.
	Env map[string]string
	// Outside are the shared files the run reads where they are (not under
	// the shared home): they go into the sandbox's read-only paths.
	Outside []string
}

// PrepareState readies the state of chat key under root for a run of a CLI
// with spec and auth files, whose configured environment is env: the
// directories (owned by iso's user when set, mode 0700), an empty temporary
// directory, and fresh copies of the shared files from the shared home
// (env's HOME, else sharedHome). Every file is created through descriptors
// that never follow a symbolic link: the directory belongs to the agent,
// which may have planted links in it.
func PrepareState(root, key string, spec registry.StateSpec, auth []string, env map[string]string, sharedHome string, iso *procrun.Isolation) (ChatState, error) {
	if !validStateKey(key) {
		return ChatState{}, fmt.Errorf("agent state: bad chat key %q", key)
	}
	if err := ownDir(root, 0o711, nil); err != nil {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	if iso != nil {
		if err := traversable(root); err != nil {
			return ChatState{}, fmt.Errorf("agent state: %w", err)
		}
	}
	st := ChatState{Dir: filepath.Join(root, key)}
	st.Home, st.Tmp = filepath.Join(st.Dir, stateHome), filepath.Join(st.Dir, stateTmp)
	if err := ownDir(st.Dir, 0o700, iso); err != nil {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	dir, err := openDirNoFollow(st.Dir)
	if err != nil {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	defer dir.Close()
	if err := unix.Mkdirat(int(dir.Fd()), stateHome, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	// The run's temporary directory starts empty.
	if err := removeAllAt(dir, stateTmp); err != nil {
		return ChatState{}, fmt.Errorf("agent state: empty %s: %w", st.Tmp, err)
	}
	if err := unix.Mkdirat(int(dir.Fd()), stateTmp, 0o700); err != nil {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	for _, sub := range []string{stateHome, stateTmp} {
		if err := chownAt(dir, sub, iso); err != nil {
			return ChatState{}, fmt.Errorf("agent state: %w", err)
		}
	}

	if h := env["HOME"]; h != "" {
		sharedHome = h
	}
	// Where each shared directory is, and where the chat's copy goes.
	st.Env = map[string]string{"HOME": st.Home, "TMPDIR": st.Tmp}
	type mapping struct{ shared, chat string }
	maps := []mapping{{sharedHome, st.Home}}
	shared := map[string]string{"HOME": sharedHome}
	for k, rel := range xdgDirs {
		st.Env[k] = filepath.Join(st.Home, rel)
		shared[k] = filepath.Join(sharedHome, rel)
		if v := env[k]; v != "" {
			shared[k] = v
		}
		maps = append(maps, mapping{shared[k], st.Env[k]})
	}
	for k, rel := range spec.Env {
		st.Env[k] = filepath.Join(st.Home, rel)
		shared[k] = filepath.Join(sharedHome, rel)
		if v := env[k]; v != "" {
			shared[k] = v
		}
		maps = append(maps, mapping{shared[k], st.Env[k]})
	}
	// The longest shared prefix maps a path.
	sort.Slice(maps, func(i, j int) bool { return len(maps[i].shared) > len(maps[j].shared) })
	lookup := func(k string) string {
		if v, ok := shared[k]; ok {
			return v
		}
		return env[k]
	}
	home, err := openDirNoFollow(st.Home)
	if err != nil {
		return ChatState{}, fmt.Errorf("agent state: %w", err)
	}
	defer home.Close()
	// The state switches and XDG directories exist (a CLI may refuse a
	// CODEX_HOME that does not).
	for k, v := range st.Env {
		if k == "HOME" || k == "TMPDIR" {
			continue
		}
		rel, err := filepath.Rel(st.Home, v)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		if err := mkdirsAt(home, rel, iso); err != nil {
			return ChatState{}, fmt.Errorf("agent state: %w", err)
		}
	}
	budget := int64(maxSharedBytes)
	seen := map[string]bool{}
	for _, p := range append(append([]string(nil), auth...), spec.Shared...) {
		src, ok := registry.ExpandPath(p, sharedHome, lookup)
		if !ok || seen[src] {
			continue
		}
		seen[src] = true
		var rel string
		for _, m := range maps {
			if r, err := filepath.Rel(m.shared, src); err == nil && r != ".." && !strings.HasPrefix(r, "../") && r != "." {
				if r2, err := filepath.Rel(st.Home, filepath.Join(m.chat, r)); err == nil && !strings.HasPrefix(r2, "..") {
					rel = r2
				}
				break
			}
		}
		if _, err := os.Stat(src); err != nil {
			// Not set up (the CLI says so at its start): a file the chat's
			// agent left there earlier goes too, so a chat's settings always
			// mirror the operator's and nothing an agent wrote persists.
			if rel != "" {
				if err := removeFileAt(home, rel); err != nil {
					return ChatState{}, fmt.Errorf("agent state: reset %s: %w", rel, err)
				}
			}
			continue
		}
		if rel == "" {
			st.Outside = append(st.Outside, src)
			continue
		}
		if err := copyShared(home, src, rel, iso, &budget); err != nil {
			return ChatState{}, fmt.Errorf("agent state: copy %s: %w", src, err)
		}
	}
	return st, nil
}

// ownDir creates dir (its parent must exist) when missing and gives it mode
// and, with iso, the agent user; dir must be a directory, never a link.
func ownDir(dir string, mode os.FileMode, iso *procrun.Isolation) error {
	if err := os.Mkdir(dir, mode); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	d, err := openDirNoFollow(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Chmod(mode); err != nil {
		return err
	}
	if iso != nil {
		return d.Chown(int(iso.UID), int(iso.GID))
	}
	return nil
}

// chownAt gives dir/name (not following a link) to iso's user.
func chownAt(dir *os.File, name string, iso *procrun.Isolation) error {
	if iso == nil {
		return nil
	}
	return unix.Fchownat(int(dir.Fd()), name, int(iso.UID), int(iso.GID), unix.AT_SYMLINK_NOFOLLOW)
}

// beneath resolves a path below a directory descriptor, never through a
// symbolic link or out of it.
const beneath = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// copyShared copies src (a file or a directory tree; links in it are
// followed, it is the operator's) to rel below home, replacing what is
// there, as iso's user's files (0600, directories 0700).
func copyShared(home *os.File, src, rel string, iso *procrun.Isolation, budget *int64) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := mkdirsAt(home, filepath.Dir(rel), iso); err != nil {
		return err
	}
	if !fi.IsDir() {
		return copyFileAt(home, src, rel, iso, budget)
	}
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(rel, r)
		info, err := os.Stat(p) // follows links
		if err != nil {
			return nil // a dangling link
		}
		if info.IsDir() {
			return mkdirsAt(home, target, iso)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		return copyFileAt(home, p, target, iso, budget)
	})
}

// mkdirsAt creates rel and its parents below home (0700, iso's).
func mkdirsAt(home *os.File, rel string, iso *procrun.Isolation) error {
	if rel == "." || rel == "" {
		return nil
	}
	cur := ""
	for _, part := range strings.Split(filepath.Clean(rel), string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fd, err := unix.Openat2(int(home.Fd()), cur, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC, Resolve: beneath})
		if err == nil {
			unix.Close(fd)
			continue
		}
		if !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("%s: %w", cur, err)
		}
		parent, err := openBeneath(home, filepath.Dir(cur), unix.O_RDONLY|unix.O_DIRECTORY)
		if err != nil {
			return err
		}
		err = unix.Mkdirat(parent, filepath.Base(cur), 0o700)
		if err == nil && iso != nil {
			err = unix.Fchownat(parent, filepath.Base(cur), int(iso.UID), int(iso.GID), unix.AT_SYMLINK_NOFOLLOW)
		}
		unix.Close(parent)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("%s: %w", cur, err)
		}
	}
	return nil
}

// removeFileAt removes the file (or link) at rel below home, never through
// a link; a missing file or a directory there is left alone.
func removeFileAt(home *os.File, rel string) error {
	parent, err := openBeneath(home, filepath.Dir(rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	err = unix.Unlinkat(parent, filepath.Base(rel), 0)
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EISDIR) {
		return nil
	}
	return err
}

// openBeneath opens rel below home ("." is home itself).
func openBeneath(home *os.File, rel string, flags uint64) (int, error) {
	if rel == "." || rel == "" {
		return unix.Dup(int(home.Fd()))
	}
	fd, err := unix.Openat2(int(home.Fd()), rel, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC, Resolve: beneath})
	if err != nil {
		return -1, fmt.Errorf("%s: %w", rel, err)
	}
	return fd, nil
}

// copyFileAt writes src's content to rel below home: whatever is at rel is
// removed first (a planted link is removed, not followed), the file is
// created exclusively and handed to iso's user, mode 0600.
func copyFileAt(home *os.File, src, rel string, iso *procrun.Isolation, budget *int64) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	parent, err := openBeneath(home, filepath.Dir(rel), unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return err
	}
	defer unix.Close(parent)
	name := filepath.Base(rel)
	if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
		if !errors.Is(err, unix.EISDIR) {
			return err
		}
		if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil {
			return fmt.Errorf("%s is a directory: %w", rel, err)
		}
	}
	fd, err := unix.Openat(parent, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	out := os.NewFile(uintptr(fd), rel)
	defer out.Close()
	n, err := io.Copy(out, io.LimitReader(in, *budget+1))
	if err != nil {
		return err
	}
	if *budget -= n; *budget < 0 {
		return fmt.Errorf("the shared files are larger than %d MB", maxSharedBytes>>20)
	}
	if iso != nil {
		if err := out.Chown(int(iso.UID), int(iso.GID)); err != nil {
			return err
		}
	}
	return out.Close()
}

// removeAllAt removes name below dir and everything in it, never following
// a link.
func removeAllAt(dir *os.File, name string) error {
	fd, err := unix.Openat2(int(dir.Fd()), name, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: beneath})
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return unix.Unlinkat(int(dir.Fd()), name, 0)
	}
	if err != nil {
		return err
	}
	sub := os.NewFile(uintptr(fd), name)
	names, err := sub.Readdirnames(-1)
	if err == nil {
		for _, n := range names {
			if err = removeAllAt(sub, n); err != nil {
				break
			}
		}
	}
	sub.Close()
	if err != nil {
		return err
	}
	return unix.Unlinkat(int(dir.Fd()), name, unix.AT_REMOVEDIR)
}
