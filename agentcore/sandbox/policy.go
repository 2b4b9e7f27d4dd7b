// The policy of a sandboxed run: what it may read, write and connect to,
// and the checks a caller runs on it before starting the run.

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Errors of this package.
var (
	// ErrUnavailable is returned (wrapped) when this kernel cannot enforce a
	// policy: no Landlock, or a Landlock ABI below 4 (no TCP rules).
	ErrUnavailable = errors.New("sandbox: Landlock is unavailable")
	// ErrPolicy is returned (wrapped) for a malformed policy or command
	// line: a relative path, an empty entry, a policy too long for argv.
	ErrPolicy = errors.New("sandbox: invalid policy")
	// ErrOverlap is returned (wrapped) when a policy grants a forbidden path,
	// a path above one (which contains it) or a path below one.
	ErrOverlap = errors.New("sandbox: the policy grants a forbidden path")
	// ErrSymlink is returned (wrapped) when a ReadWrite path goes through a
	// symbolic link.
	ErrSymlink = errors.New("sandbox: a read-write path goes through a symbolic link")
	// ErrSecureExec is returned by Exec when the helper was started in
	// secure-exec mode: set-uid or set-gid, or with file capabilities.
	ErrSecureExec = errors.New("sandbox: the helper runs with privileges granted by its file (set-uid, set-gid or file capabilities)")
	// ErrUsage is returned (wrapped) by Exec for a malformed command line.
	ErrUsage = errors.New("sandbox: usage: sandbox POLICY_JSON -- /ABSOLUTE/BIN [ARGS...]")
)

// Policy is what a sandboxed process, and every process it starts, may do.
// It is encoded as JSON, one argv element of the helper (see Command).
//
// Every path is absolute. A rule on a directory covers everything beneath
// it. Landlock rules only allow: whatever no rule grants is denied, as far
// as the kernel's Landlock ABI can restrict it (see the package
// documentation for what it cannot).
//
// The bot's own paths (its data, config and state directories, relay
// sockets, database files) must never be granted: list them in Forbidden and
// check the policy with Overlaps before starting a run.
type Policy struct {
	// ReadWrite are the directories and files the sandbox may read, write,
	// execute, create, remove, rename and link within, and truncate: the
	// chat's workspace, its attachments, a per-run temporary directory, the
	// chat's own agent state directory. No component of these paths may be
	// a symbolic link (pass canonical paths, e.g. from
	// filepath.EvalSymlinks): a directory the agent can write could
	// otherwise be turned into a link to another chat's.
	ReadWrite []string `json:"read_write,omitempty"`
	// ReadOnly are the directories and files the sandbox may read, list and
	// execute: SystemReadOnly, the CLI's installation directory, the shared
	// login files of the agent user. Symbolic links are followed; what they
	// point to is granted (and checked against Forbidden).
	ReadOnly []string `json:"read_only,omitempty"`
	// Devices are device files (or directories of them) the sandbox may open
	// for reading and writing, without device ioctls: SystemDevices.
	Devices []string `json:"devices,omitempty"`
	// Terminals are device files (or directories of them) the sandbox may
	// open for reading and writing and use ioctls on (Landlock ABI 5): the
	// pseudo-terminals an agent opens for its own shells, SystemTerminals.
	Terminals []string `json:"terminals,omitempty"`
	// ConnectTCP are the only TCP ports connect(2) may reach, on any
	// address (Landlock rules are by port): DefaultConnectTCP and the ports
	// of the agent's configured endpoints (PortsOf). Empty: no TCP
	// connection at all.
	ConnectTCP []uint16 `json:"connect_tcp,omitempty"`
	// BindTCP are the only TCP ports bind(2) may use; 0 allows binding to
	// an ephemeral port chosen by the kernel. Empty: no TCP bind. Ignored
	// when AnyBindTCP is set.
	BindTCP []uint16 `json:"bind_tcp,omitempty"`
	// AnyBindTCP leaves bind(2) unrestricted (Landlock does not handle it).
	// The default restricts it: an agent that may bind any port can listen
	// on the port of a local endpoint that is down (a model server on
	// localhost, say) and receive what other chats' agents send there.
	// Servers an agent starts for its own tests on fixed ports need either
	// this or those ports in BindTCP (and in ConnectTCP to reach them).
	AnyBindTCP bool `json:"any_bind_tcp,omitempty"`
	// Scope confines abstract unix sockets and signals to the sandbox
	// (Landlock ABI 6): its processes can neither connect to an abstract
	// socket created outside it nor signal a process outside it. On an
	// older kernel it is not enforced and the Report says so.
	Scope bool `json:"scope,omitempty"`
	// Forbidden are paths no rule may grant, be above or be below. Apply
	// checks them against the paths it actually opens (after following
	// symbolic links), so a link swapped in after the caller's Overlaps
	// check is still refused.
	Forbidden []string `json:"forbidden,omitempty"`
}

// DefaultConnectTCP are the TCP ports every sandbox may connect to: HTTPS
// and HTTP, on any host.
func DefaultConnectTCP() []uint16 { return []uint16{80, 443} }

// systemReadOnly are the candidates of SystemReadOnly.
var systemReadOnly = []string{
	"/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/nix/store", "/proc",
	"/sys/devices/system/cpu", "/sys/fs/cgroup",
}

// SystemReadOnly lists the system paths a CLI and its tools need to read and
// execute, those present on this host: /usr, /etc, /bin, /sbin, /lib*,
// /opt, /proc, the CPU and cgroup parts of /sys (runtimes size themselves
// from them), and the file /etc/resolv.conf links to when it lies outside
// them (systemd-resolved's stub under /run). /etc may contain the bot's
// configuration and secrets (/etc/threadline): pass the result through
// Exclude with the bot's paths.
func SystemReadOnly() []string {
	out := existing(systemReadOnly)
	if real, err := filepath.EvalSymlinks("/etc/resolv.conf"); err == nil && !covered(real, out) {
		out = append(out, real)
	}
	return out
}

// SystemDevices lists the device files every process expects to open for
// reading and writing, those present: /dev/null, /dev/zero, /dev/full,
// /dev/random, /dev/urandom and /dev/tty (the controlling terminal, if the
// process has one; no ioctl on it, so no TIOCSTI into it).
func SystemDevices() []string {
	return existing([]string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"})
}

// SystemTerminals lists what an agent needs to open pseudo-terminals of its
// own (a shell tool under a pty): /dev/ptmx and /dev/pts, with ioctls.
func SystemTerminals() []string {
	return existing([]string{"/dev/ptmx", "/dev/pts"})
}

// existing is the paths of candidates that exist (as links or not).
func existing(candidates []string) []string {
	var out []string
	for _, p := range candidates {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// covered reports whether p is at or below one of dirs (through their
// resolved forms too).
func covered(p string, dirs []string) bool {
	for _, d := range dirs {
		for _, v := range forms(d) {
			if within(p, v) {
				return true
			}
		}
	}
	return false
}

// PortsOf returns the TCP ports of urls, sorted and without duplicates: the
// explicit port, else the scheme's (http and ws 80, https and wss 443). A
// plain host:port counts too. Entries without a port and with another
// scheme, and entries that do not parse, are left out; the agent then
// cannot reach them, which its run will show.
func PortsOf(urls ...string) []uint16 {
	var out []uint16
	for _, s := range urls {
		s = strings.TrimSpace(s)
		if p, ok := portOf(s); ok {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func portOf(s string) (uint16, bool) {
	if !strings.Contains(s, "://") {
		_, port, err := net.SplitHostPort(s)
		if err != nil {
			return 0, false
		}
		return parsePort(port)
	}
	u, err := url.Parse(s)
	if err != nil {
		return 0, false
	}
	if port := u.Port(); port != "" {
		return parsePort(port)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "ws":
		return 80, true
	case "https", "wss":
		return 443, true
	}
	return 0, false
}

func parsePort(s string) (uint16, bool) {
	n, err := strconv.ParseUint(s, 10, 16)
	if err != nil || n == 0 {
		return 0, false
	}
	return uint16(n), true
}

// granted lists every path p grants, with the kind of grant.
func (p Policy) granted() []grant {
	var out []grant
	for _, set := range []struct {
		kind  kind
		paths []string
	}{{readWrite, p.ReadWrite}, {readOnly, p.ReadOnly}, {device, p.Devices}, {terminal, p.Terminals}} {
		for _, path := range set.paths {
			out = append(out, grant{kind: set.kind, path: path})
		}
	}
	return out
}

// kind is the kind of access a path is granted.
type kind int

const (
	readWrite kind = iota
	readOnly
	device
	terminal
)

func (k kind) String() string {
	return [...]string{"read_write", "read_only", "devices", "terminals"}[k]
}

type grant struct {
	kind kind
	path string
}

// validate checks that every path of p is absolute and not empty.
func (p Policy) validate() error {
	for _, g := range p.granted() {
		if err := checkPath(g.path); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrPolicy, g.kind, err)
		}
	}
	for _, f := range p.Forbidden {
		if err := checkPath(f); err != nil {
			return fmt.Errorf("%w: forbidden: %w", ErrPolicy, err)
		}
	}
	return nil
}

func checkPath(p string) error {
	if p == "" || !filepath.IsAbs(p) {
		return fmt.Errorf("%q is not an absolute path", p)
	}
	if strings.ContainsRune(p, 0) {
		return fmt.Errorf("%q contains a NUL byte", p)
	}
	return nil
}

// Overlaps returns an error wrapping ErrOverlap when p grants (in any of its
// path lists) a path of forbidden, a directory above one or a path below
// one, comparing the paths as given and as their symbolic links resolve
// (the longest existing prefix), or an error wrapping ErrPolicy when a path
// is not absolute. p.Forbidden is checked too. It is the caller's assertion
// that no path of the bot reaches a run's policy.
func Overlaps(p Policy, forbidden []string) error {
	if err := p.validate(); err != nil {
		return err
	}
	all := append(slices.Clone(p.Forbidden), forbidden...)
	for _, f := range all {
		if err := checkPath(f); err != nil {
			return fmt.Errorf("%w: forbidden: %w", ErrPolicy, err)
		}
	}
	for _, g := range p.granted() {
		if f, ok := overlapping(forms(g.path), all); ok {
			return fmt.Errorf("%w: %s %s and forbidden %s", ErrOverlap, g.kind, g.path, f)
		}
	}
	return nil
}

// overlapping returns the first of forbidden (in any of its forms) that is
// at, above or below one of paths.
func overlapping(paths, forbidden []string) (string, bool) {
	for _, f := range forbidden {
		for _, fv := range forms(f) {
			for _, p := range paths {
				if within(p, fv) || within(fv, p) {
					return f, true
				}
			}
		}
	}
	return "", false
}

// forms returns p cleaned and, when different, p with its longest existing
// prefix's symbolic links resolved.
func forms(p string) []string {
	p = filepath.Clean(p)
	out := []string{p}
	if r := resolvePrefix(p); r != p {
		out = append(out, r)
	}
	return out
}

// resolvePrefix resolves the symbolic links of p's longest existing prefix
// and appends the rest.
func resolvePrefix(p string) string {
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(r, rest)
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether p is dir or lies below it (both clean, absolute).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Exclude returns paths without forbidden ones: a path at or below a
// forbidden one is dropped; a directory above one is replaced by its
// entries, the branch that leads to the forbidden path replaced in turn
// (recursively), so that granting the result grants everything paths did
// but the forbidden subtrees. Landlock can only allow, never deny a subtree,
// so this is how /etc is granted without /etc/threadline. Entries created
// later in a split directory are not covered. Paths are compared as given
// and resolved, as in Overlaps.
func Exclude(paths, forbidden []string) ([]string, error) {
	for _, f := range forbidden {
		if err := checkPath(f); err != nil {
			return nil, fmt.Errorf("%w: forbidden: %w", ErrPolicy, err)
		}
	}
	var out []string
	for _, p := range paths {
		if err := checkPath(p); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPolicy, err)
		}
		kept, err := exclude(filepath.Clean(p), forbidden)
		if err != nil {
			return nil, err
		}
		out = append(out, kept...)
	}
	return out, nil
}

func exclude(p string, forbidden []string) ([]string, error) {
	pf := forms(p)
	above := false
	for _, f := range forbidden {
		for _, fv := range forms(f) {
			for _, v := range pf {
				switch {
				case within(v, fv):
					return nil, nil // at or below a forbidden path
				case within(fv, v):
					above = true
				}
			}
		}
	}
	if !above {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("sandbox: exclude: split %s: %w", p, err)
	}
	var out []string
	for _, e := range entries {
		kept, err := exclude(filepath.Join(p, e.Name()), forbidden)
		if err != nil {
			return nil, err
		}
		out = append(out, kept...)
	}
	return out, nil
}

// maxArg is the longest argv element Linux accepts (MAX_ARG_STRLEN,
// 32 pages of 4 KiB, with its NUL byte).
const maxArg = 32*4096 - 1

// Command returns the command line that runs bin with args under p: path is
// helper[0] and argv is helper, then p's JSON, "--", bin and args (so
// argv[0] is helper[0]; the agent gets bin as its argv[0], as with
// exec.Command(bin, args...)). helper is how this program's sandbox
// subcommand is started, e.g. {"/usr/local/bin/threadline", "sandbox"};
// helper[0] and bin must be absolute. Use it as exec.Cmd{Path: path, Args:
// argv} with the agent's environment, directory and credential: the helper
// passes the environment through unchanged.
func Command(helper []string, p Policy, bin string, args []string) (path string, argv []string, err error) {
	if len(helper) == 0 || !filepath.IsAbs(helper[0]) {
		return "", nil, fmt.Errorf("%w: the helper %q must start with an absolute path", ErrPolicy, helper)
	}
	if !filepath.IsAbs(bin) {
		return "", nil, fmt.Errorf("%w: the executable %q must be an absolute path", ErrPolicy, bin)
	}
	if err := p.validate(); err != nil {
		return "", nil, err
	}
	b, err := json.Marshal(p)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %w", ErrPolicy, err)
	}
	if len(b) > maxArg {
		return "", nil, fmt.Errorf("%w: its JSON is %d bytes, more than one argument may hold (%d)", ErrPolicy, len(b), maxArg)
	}
	argv = make([]string, 0, len(helper)+3+len(args))
	argv = append(argv, helper...)
	argv = append(argv, string(b), "--", bin)
	argv = append(argv, args...)
	return helper[0], argv, nil
}

// parseArgs reads the helper's arguments: POLICY_JSON -- BIN [ARGS...]. It
// returns the policy, bin and the agent's argv (bin, then ARGS).
func parseArgs(args []string) (Policy, string, []string, error) {
	if len(args) < 3 || args[1] != "--" {
		return Policy{}, "", nil, fmt.Errorf("%w: got %d arguments", ErrUsage, len(args))
	}
	var p Policy
	dec := json.NewDecoder(strings.NewReader(args[0]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, "", nil, fmt.Errorf("%w: policy: %w", ErrUsage, err)
	}
	if dec.More() {
		return Policy{}, "", nil, fmt.Errorf("%w: policy: trailing data", ErrUsage)
	}
	bin := args[2]
	if !filepath.IsAbs(bin) {
		return Policy{}, "", nil, fmt.Errorf("%w: %q is not an absolute path", ErrUsage, bin)
	}
	if err := p.validate(); err != nil {
		return Policy{}, "", nil, err
	}
	return p, bin, args[2:], nil
}
