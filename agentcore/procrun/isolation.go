// Isolation of host agents: starting them as another, unprivileged user.

package procrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// ErrNoIsolation is returned by NewIsolation when this process cannot start
// agents as another user.
var ErrNoIsolation = errors.New("procrun: cannot isolate agents")

// Isolation runs host agents (a Spec without Container) as another,
// unprivileged user, so that an agent and every tool it starts cannot read
// the bot's memory, environment or private files, nor signal or trace it.
//
// A root bot applies the credential directly: the switch from uid 0 to
// another uid clears every capability. A bot that is not root but holds
// CAP_SETUID and CAP_SETGID (the systemd unit's ambient capabilities) starts
// the agent through util-linux setpriv, which switches the user and clears
// the inheritable (hence the ambient) capabilities, so none reach the agent.
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
	// Setpriv, when set, is the setpriv executable the agent is started
	// through; empty applies the credential directly (root).
	Setpriv string
}

// NewIsolation looks name up and returns how to start agents as that user,
// or an error wrapping ErrNoIsolation that says why it is not possible: the
// user is missing, is root or this process's user, is in the lxd group (root
// on the host), this process may not switch users, or (not root) setpriv is
// not installed.
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
	if os.Geteuid() != 0 {
		p, err := exec.LookPath("setpriv")
		if err != nil {
			return nil, fmt.Errorf("%w: setpriv (util-linux) is not installed: a bot that is not root starts agents through it", ErrNoIsolation)
		}
		iso.Setpriv = p
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
	const capSetgid, capSetuid = 6, 7
	if eff&(1<<capSetuid) == 0 || eff&(1<<capSetgid) == 0 {
		return false, "the bot is not root and lacks CAP_SETUID and CAP_SETGID (the systemd unit grants them with AmbientCapabilities=CAP_SETUID CAP_SETGID)"
	}
	return true, ""
}

// effectiveCaps reads CapEff of this process.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, errors.New("no CapEff in /proc/self/status")
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

// credential is what a relay applies to the agent it starts.
type credential struct {
	UID    uint32   `json:"uid"`
	GID    uint32   `json:"gid"`
	Groups []uint32 `json:"groups,omitempty"`
}

// apply rewrites l to start as iso's user: the environment, and for setpriv
// the command itself. It returns the credential to apply to the command
// directly, nil with setpriv.
func (iso *Isolation) apply(l launch) (launch, *credential) {
	l.env = iso.environ(l.env)
	if iso.Setpriv == "" {
		return l, &credential{UID: iso.UID, GID: iso.GID, Groups: iso.Groups}
	}
	args := []string{
		"--reuid=" + strconv.FormatUint(uint64(iso.UID), 10),
		"--regid=" + strconv.FormatUint(uint64(iso.GID), 10),
	}
	if len(iso.Groups) == 0 {
		args = append(args, "--clear-groups")
	} else {
		gs := make([]string, len(iso.Groups))
		for i, g := range iso.Groups {
			gs[i] = strconv.FormatUint(uint64(g), 10)
		}
		args = append(args, "--groups="+strings.Join(gs, ","))
	}
	// Clearing the inheritable set clears the ambient one: after the exec
	// the agent has no capability at all.
	args = append(args, "--inh-caps=-all", "--", l.path)
	l.args = append(args, l.args...)
	l.path = iso.Setpriv
	return l, nil
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
