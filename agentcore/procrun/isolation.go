// Isolation of host agents: starting them as another, unprivileged user.

package procrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoIsolation is returned by NewIsolation when this process cannot start
// agents as another user.
var ErrNoIsolation = errors.New("procrun: cannot isolate agents")

// ErrWritableExecutable is returned by CheckExecutable (and Start) for an
// agent executable that the agent user could change.
var ErrWritableExecutable = errors.New("procrun: the agent user can modify the agent's executable")

// Isolation runs host agents (a Spec without Container) as another,
// unprivileged user, so that an agent and every tool it starts cannot read
// the bot's memory, environment or private files, nor signal or trace it.
//
// The agent is started with its credential (SysProcAttr.Credential), by a
// root bot or by one that holds CAP_SETUID and CAP_SETGID (the systemd
// unit's capabilities). A root bot's switch to another uid clears every
// capability. A non-root bot cleared its ambient and inheritable sets at
// start (DropInheritedCaps), so the exec'd agent, which has no file
// capabilities, gets none either: its permitted, effective, ambient and
// inheritable sets are empty.
//
// The agent's USER and LOGNAME become the user's; its HOME becomes the user's
// home unless the agent's configured environment sets another one; XDG base
// directories inherited from the bot are dropped (they are the bot's).
type Isolation struct {
	// User is the account name.
	User string
	// UID and GID are the agent's ids; Groups its supplementary groups.
	UID, GID uint32
	Groups   []uint32
	// Home is the user's home directory.
	Home string
}

// NewIsolation looks name up and returns how to start agents as that user,
// or an error wrapping ErrNoIsolation that says why it is not possible: the
// user is missing, is root or this process's user, is in the lxd group (root
// on the host), or this process may not switch users.
func NewIsolation(name string) (*Isolation, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("%w: user %s: %w", ErrNoIsolation, name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%w: user %s has non-numeric ids", ErrNoIsolation, name)
	}
	if uid == 0 || int(uid) == os.Geteuid() {
		return nil, fmt.Errorf("%w: user %s is root or the bot's own user; it must be a separate, unprivileged user", ErrNoIsolation, name)
	}
	iso := &Isolation{User: name, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("%w: groups of %s: %w", ErrNoIsolation, name, err)
	}
	for _, g := range gids {
		n, err := strconv.ParseUint(g, 10, 32)
		if err != nil {
			continue
		}
		if grp, err := user.LookupGroupId(g); err == nil && grp.Name == "lxd" {
			return nil, fmt.Errorf("%w: user %s is in the lxd group, which is root on the host; remove it (gpasswd -d %s lxd)", ErrNoIsolation, name, name)
		}
		if uint32(n) != iso.GID {
			iso.Groups = append(iso.Groups, uint32(n))
		}
	}
	if ok, why := CanSwitchUser(); !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoIsolation, why)
	}
	return iso, nil
}

// CanSwitchUser reports whether this process may start children as another
// user: it is root, or holds CAP_SETUID and CAP_SETGID. Otherwise it says why.
func CanSwitchUser() (bool, string) {
	if os.Geteuid() == 0 {
		return true, ""
	}
	eff, err := effectiveCaps()
	if err != nil {
		return false, "cannot read this process's capabilities: " + err.Error()
	}
	if eff&(1<<capSetuid) == 0 || eff&(1<<capSetgid) == 0 {
		return false, "the bot is not root and lacks CAP_SETUID and CAP_SETGID (the systemd unit grants them with AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL)"
	}
	return true, ""
}

// Capabilities a non-root bot and its relays use (capabilities(7)).
const (
	capChown  = 0 // CAP_CHOWN: hand chat directories and files to the agent user
	capKill   = 5 // CAP_KILL: signal agents, which run as another user
	capSetgid = 6 // CAP_SETGID: start agents with the agent user's groups
	capSetuid = 7 // CAP_SETUID: start agents as the agent user
)

// relayCaps are the capabilities a relay of an isolated run needs and gets
// as ambient ones: CAP_SETUID and CAP_SETGID to start the agent as the agent
// user, CAP_KILL to signal it; only those this (non-root) process holds. A
// root bot's relay is root and needs none; a relay of a run that is not
// isolated needs none. The relay clears its ambient set at start, so the
// agent gets none of them.
func relayCaps(cred *credential) []uintptr {
	if cred == nil || os.Geteuid() == 0 {
		return nil
	}
	eff, err := effectiveCaps()
	if err != nil {
		return nil
	}
	var out []uintptr
	for _, c := range []uintptr{capSetuid, capSetgid, capKill} {
		if eff&(1<<c) != 0 {
			out = append(out, c)
		}
	}
	return out
}

type isolationKey struct{}

// WithIsolation returns ctx carrying iso: Start runs host agents (Spec
// without Container and without its own Isolation) as iso's user. A nil iso
// leaves ctx unchanged.
func WithIsolation(ctx context.Context, iso *Isolation) context.Context {
	if iso == nil {
		return ctx
	}
	return context.WithValue(ctx, isolationKey{}, iso)
}

// isolationOf is the isolation of spec's start: its own, else ctx's; never
// for a container run (the container isolates it).
func isolationOf(ctx context.Context, spec Spec) *Isolation {
	if spec.Container != nil {
		return nil
	}
	if spec.Isolation != nil {
		return spec.Isolation
	}
	iso, _ := ctx.Value(isolationKey{}).(*Isolation)
	return iso
}

// credential is the user an isolated agent starts as. A relay is told the
// name only and looks the ids up itself (relayCredential).
type credential struct {
	User   string
	UID    uint32
	GID    uint32
	Groups []uint32
}

// apply adapts l's environment to iso's user and returns the credential
// the command starts with.
func (iso *Isolation) apply(l launch) (launch, *credential) {
	l.env = iso.environ(l.env)
	return l, &credential{User: iso.User, UID: iso.UID, GID: iso.GID, Groups: iso.Groups}
}

// botEnvKeys are variables that, inherited from the bot, point at the bot's
// own directories: dropped for an isolated agent.
var botEnvKeys = []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR"}

// environ adapts a child's environment to iso's user. A HOME or XDG
// directory equal to the bot's own value was inherited, not configured.
func (iso *Isolation) environ(env []string) []string {
	out := make([]string, 0, len(env)+3)
	inherited := func(k, v string) bool {
		own, ok := os.LookupEnv(k)
		return ok && own == v
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "USER", k == "LOGNAME":
			continue
		case k == "HOME" && inherited(k, v):
			continue
		case strings.HasPrefix(k, "XDG_") && inherited(k, v) && slices.Contains(botEnvKeys, k):
			continue
		}
		out = append(out, kv)
	}
	if !hasKey(out, "HOME") && iso.Home != "" {
		out = append(out, "HOME="+iso.Home)
	}
	return append(out, "USER="+iso.User, "LOGNAME="+iso.User)
}

func hasKey(env []string, key string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == key {
			return true
		}
	}
	return false
}

// isolationHint explains a start error of an isolated agent that looks like
// a permission problem.
func isolationHint(err error, iso *Isolation, dir string) error {
	// A relay reports its start error as text.
	if iso == nil || err == nil || (!errors.Is(err, os.ErrPermission) && !strings.Contains(err.Error(), "permission denied")) {
		return err
	}
	where := "its executable"
	if dir != "" {
		where = dir + " or its executable"
	}
	return fmt.Errorf("%w (agents run as user %s, which cannot reach %s: make it accessible to that user, e.g. chown or chmod o+x on the directories)", err, iso.User, where)
}

// CheckExecutable returns an error wrapping ErrWritableExecutable when iso's
// user could change the executable at path: it owns or may write the file,
// or may write a directory above it (and so replace the file), for path as
// given and for what its symbolic links resolve to. Such an agent could
// rewrite its own CLI, which the bot runs as itself for version probes and
// detection, and every later run. A sticky directory (/tmp) does not count:
// the user cannot replace another owner's file there. Install agent CLIs
// owned by root (or the bot) and not writable by the agent user.
func (iso *Isolation) CheckExecutable(path string) error {
	paths := []string{filepath.Clean(path)}
	if real, err := filepath.EvalSymlinks(path); err == nil && real != paths[0] {
		paths = append(paths, real)
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if iso.mayWrite(fi, false) {
			return fmt.Errorf("%w: %s (owner, group or mode lets user %s write it: install it owned by root, not group- or world-writable)", ErrWritableExecutable, p, iso.User)
		}
		for d := filepath.Dir(p); ; d = filepath.Dir(d) {
			fi, err := os.Stat(d)
			if err != nil {
				return err
			}
			if iso.mayWrite(fi, true) {
				return fmt.Errorf("%w: user %s may write %s, a directory above %s, and so replace it", ErrWritableExecutable, iso.User, d, p)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	return nil
}

// ErrCannotWrite is returned (wrapped) by CanWrite.
var ErrCannotWrite = errors.New("procrun: the agent user cannot write the directory")

// CanWrite returns an error wrapping ErrCannotWrite, naming the directory
// in the way, when iso's user cannot create files in dir: a directory above
// it it may not pass through, or dir itself it may not write to.
func (iso *Isolation) CanWrite(dir string) error {
	dir = filepath.Clean(dir)
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if !iso.may(fi, 0o1) {
			return fmt.Errorf("%w: user %s cannot pass through %s", ErrCannotWrite, iso.User, d)
		}
		if d == dir && !iso.may(fi, 0o2) {
			return fmt.Errorf("%w: user %s cannot write in %s", ErrCannotWrite, iso.User, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// may reports whether iso's user holds the permission bit (1 search, 2
// write, 4 read) on fi, as its owner, a member of its group or another.
func (iso *Isolation) may(fi os.FileInfo, bit os.FileMode) bool {
	uid, gid, ok := ownerOf(fi)
	if !ok {
		return false
	}
	mode := fi.Mode().Perm()
	switch {
	case uid == iso.UID:
		return mode&(bit<<6) != 0
	case gid == iso.GID || slices.Contains(iso.Groups, gid):
		return mode&(bit<<3) != 0
	default:
		return mode&bit != 0
	}
}

// mayWrite reports whether iso's user may write fi (a directory: may
// replace its entries).
func (iso *Isolation) mayWrite(fi os.FileInfo, dir bool) bool {
	uid, gid, ok := ownerOf(fi)
	if !ok {
		return false
	}
	mode := fi.Mode()
	if dir && mode&os.ModeSticky != 0 && uid != iso.UID {
		return false
	}
	return uid == iso.UID || mode&0o002 != 0 ||
		(mode&0o020 != 0 && (gid == iso.GID || slices.Contains(iso.Groups, gid)))
}
