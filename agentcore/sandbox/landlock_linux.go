// Landlock enforcement of a Policy, through go-landlock.

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// configs are go-landlock's configurations by ABI, each handling every
// access right of its ABI.
var configs = []landlock.Config{
	{}, landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5,
	landlock.V6, landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11,
}

// minABI is the lowest Landlock ABI a sandbox needs: 4, the first with TCP
// rules.
const minABI = 4

// abi is the kernel's Landlock ABI as go-landlock uses it.
var abi = sync.OnceValue(func() int {
	v, err := ll.LandlockGetABIVersion()
	if err != nil || v < 0 {
		return 0
	}
	if v >= 6 {
		// As go-landlock does: a kernel that does not report the fix of its
		// signal scoping (erratum 2) counts as ABI 5.
		if e, err := ll.LandlockGetErrata(); err != nil || e&0x2 == 0 {
			v = 5
		}
	}
	return v
})

// ABI returns the Landlock ABI version of the running kernel, 0 when
// Landlock is unavailable (not built in, or not enabled at boot). A kernel
// whose signal scoping lacks its fix counts as ABI 5, as in go-landlock.
func ABI() int { return abi() }

// Available reports whether this kernel can enforce a sandbox: Landlock ABI
// 4 or newer (file-system and TCP rules). Otherwise it says why.
func Available() (ok bool, why string) {
	switch v := ABI(); {
	case v == 0:
		return false, "the kernel has no Landlock (it needs CONFIG_SECURITY_LANDLOCK=y and landlock in the lsm= boot parameter or CONFIG_LSM)"
	case v < minABI:
		return false, fmt.Sprintf("the kernel's Landlock ABI is %d; a sandbox needs ABI %d (Linux 6.7 or newer) for its TCP rules", v, minABI)
	}
	return true, ""
}

// Report says what Apply enforced, or what Plan would.
type Report struct {
	// ABI is the kernel's Landlock ABI.
	ABI int
	// FS is the file-system access rights restricted (every right of ABI),
	// as go-landlock names them.
	FS string
	// ConnectTCP tells whether TCP connect(2) is restricted (always, since
	// ABI 4 is required); BindTCP whether bind(2) is (not with AnyBindTCP).
	ConnectTCP, BindTCP bool
	// Scoped tells whether abstract unix sockets and signals are scoped
	// (Policy.Scope on ABI 6 or newer).
	Scoped bool
	// Skipped are the policy's paths left out, each with why: they do not
	// exist, or this process's user cannot reach them.
	Skipped []string
}

// String is a one-line summary of r.
func (r Report) String() string {
	s := fmt.Sprintf("landlock ABI %d: fs %s; tcp connect %t, bind %t; scoped %t", r.ABI, r.FS, r.ConnectTCP, r.BindTCP, r.Scoped)
	if len(r.Skipped) > 0 {
		s += fmt.Sprintf("; skipped %q", r.Skipped)
	}
	return s
}

// Plan does what Apply does but enforce: it checks p, opens its paths as
// this process's user and builds the ruleset, and returns what Apply (or
// the helper) would enforce on this kernel. The bot can call it before
// starting a run to log or check the Report: the helper sends none back. It
// opens the paths as the bot's user, which may reach paths the agent user
// cannot (those the helper skips).
func Plan(p Policy) (Report, error) {
	b, err := build(p)
	if err != nil {
		return Report{}, err
	}
	defer b.close()
	fd, _, err := b.cfg.NewRulesetFD(b.rules...)
	if err != nil {
		return Report{}, fmt.Errorf("sandbox: ruleset: %w", err)
	}
	if fd >= 0 {
		syscall.Close(fd)
	}
	return b.report, nil
}

// Apply restricts this process, every thread of it and everything it starts
// from now on, to p: it sets PR_SET_NO_NEW_PRIVS, handles every file-system
// access right of the kernel's ABI (including truncate and ioctl on
// devices) with p's path rules, TCP connect and (unless AnyBindTCP) bind
// with p's ports, and scopes abstract unix sockets and signals when
// p.Scope and the ABI allow (6+). UDP is not restricted, even on kernels
// whose Landlock could (ABI 10+): the policy has no UDP rules yet.
//
// It fails, restricting nothing, when the kernel's ABI is below 4 (an
// error wrapping ErrUnavailable), when p is invalid, when a ReadWrite path
// goes through a symbolic link (ErrSymlink), or when a path, once opened,
// is at, above or below one of p.Forbidden (ErrOverlap). Paths that do not
// exist or that this user cannot reach are skipped and listed in the
// Report.
//
// Symbolic links: each path is opened once (O_PATH) and the rule is added
// for that open file, so what is checked is what is granted. ReadWrite
// paths are opened with RESOLVE_NO_SYMLINKS: no component may be a link.
// The other paths follow links; their targets are granted and checked
// against Forbidden.
//
// Apply is for a Go process that goes on running after it: every thread is
// restricted (psx or syscall.AllThreadsSyscall below Landlock ABI 8, as
// go-landlock does). The helper, which executes the agent right away,
// restricts only the thread that does so (see Exec). A restriction cannot
// be lifted: Apply must never run in the bot.
func Apply(p Policy) (Report, error) {
	b, err := build(p)
	if err != nil {
		return Report{}, err
	}
	defer b.close()
	if err := b.cfg.Restrict(b.rules...); err != nil {
		return Report{}, fmt.Errorf("sandbox: landlock: %w", err)
	}
	return b.report, nil
}

// built is a policy's ruleset before it is created: the configuration,
// the rules, the files they refer to (open until the ruleset is made).
type built struct {
	cfg    landlock.Config
	rules  []landlock.Rule
	fds    []int
	report Report
}

func (b *built) close() {
	for _, fd := range b.fds {
		syscall.Close(fd)
	}
	b.fds = nil
}

// build turns p into go-landlock's configuration and rules for this
// kernel.
func build(p Policy) (_ *built, err error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	v := ABI()
	if ok, why := Available(); !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, why)
	}
	cfg := configs[min(v, len(configs)-1)]
	// TCP only: UDP (ABI 10) would need rules the policy does not have.
	cfg.HandledAccessNet &= ll.AccessNetBindTCP | ll.AccessNetConnectTCP
	if p.AnyBindTCP {
		cfg.HandledAccessNet &^= ll.AccessNetBindTCP
	}
	if !p.Scope {
		cfg.Scoped = 0
	}
	b := &built{cfg: cfg}
	defer func() {
		if err != nil {
			b.close()
		}
	}()
	b.report = Report{
		ABI:        v,
		FS:         cfg.HandledAccessFS.String(),
		ConnectTCP: cfg.HandledAccessNet&ll.AccessNetConnectTCP != 0,
		BindTCP:    cfg.HandledAccessNet&ll.AccessNetBindTCP != 0,
		Scoped:     cfg.Scoped != 0,
	}
	for _, g := range p.granted() {
		if err := b.addPath(g, p.Forbidden); err != nil {
			return nil, err
		}
	}
	for _, port := range p.ConnectTCP {
		b.rules = append(b.rules, landlock.ConnectTCP(port))
	}
	if b.report.BindTCP {
		for _, port := range p.BindTCP {
			b.rules = append(b.rules, landlock.BindTCP(port))
		}
	}
	return b, nil
}

// Access rights by kind of grant, before they are cut to the handled ones.
const (
	rightsRead      = ll.AccessFSExecute | ll.AccessFSReadFile | ll.AccessFSReadDir
	rightsReadWrite = rightsRead | ll.AccessFSWriteFile | ll.AccessFSTruncate |
		ll.AccessFSRemoveDir | ll.AccessFSRemoveFile | ll.AccessFSMakeChar | ll.AccessFSMakeDir |
		ll.AccessFSMakeReg | ll.AccessFSMakeSock | ll.AccessFSMakeFifo | ll.AccessFSMakeBlock |
		ll.AccessFSMakeSym | ll.AccessFSRefer | ll.AccessFSResolveUnix
	rightsDevice   = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSReadDir
	rightsTerminal = rightsDevice | ll.AccessFSIoctlDev
	// rightsFile are the rights that apply to a file that is not a
	// directory; the kernel refuses the others on such a rule.
	rightsFile = ll.AccessFSExecute | ll.AccessFSWriteFile | ll.AccessFSReadFile |
		ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// addPath opens g's path, checks it and adds its rule.
func (b *built) addPath(g grant, forbidden []string) error {
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC}
	if g.kind == readWrite {
		how.Resolve = unix.RESOLVE_NO_SYMLINKS
	}
	fd, err := openat2(g.path, &how)
	switch {
	case errors.Is(err, unix.ELOOP) && g.kind == readWrite:
		return fmt.Errorf("%w: %s (pass its canonical path)", ErrSymlink, g.path)
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR), errors.Is(err, unix.EACCES):
		b.report.Skipped = append(b.report.Skipped, fmt.Sprintf("%s: %v", g.path, err))
		return nil
	case err != nil:
		return fmt.Errorf("sandbox: %s %s: %w", g.kind, g.path, err)
	}
	b.fds = append(b.fds, fd)
	self := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := os.Readlink(self)
	if err != nil {
		return fmt.Errorf("sandbox: %s %s: %w", g.kind, g.path, err)
	}
	if f, ok := overlapping([]string{real}, forbidden); ok {
		return fmt.Errorf("%w: %s %s (%s) and forbidden %s", ErrOverlap, g.kind, g.path, real, f)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox: %s %s: %w", g.kind, g.path, err)
	}
	dir := st.Mode&unix.S_IFMT == unix.S_IFDIR
	if g.kind == readWrite && !dir && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: read_write %s is neither a directory nor a regular file (devices go in devices or terminals)", ErrPolicy, g.path)
	}
	rights := landlock.AccessFSSet([...]uint64{
		readWrite: rightsReadWrite, readOnly: rightsRead, device: rightsDevice, terminal: rightsTerminal,
	}[g.kind])
	if !dir {
		rights &= rightsFile
	}
	rights &= b.cfg.HandledAccessFS
	// go-landlock opens the path it is given: the magic link of the file
	// opened here is that very file, whatever happened to g.path since.
	b.rules = append(b.rules, landlock.PathAccess(rights, self))
	return nil
}

// openat2 opens path as how says, retrying a few times on EINTR and EAGAIN
// (a rename raced with a RESOLVE_ lookup): a process renaming in a loop
// makes it fail, not spin.
func openat2(path string, how *unix.OpenHow) (fd int, err error) {
	for range 16 {
		fd, err = unix.Openat2(unix.AT_FDCWD, path, how)
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			break
		}
	}
	return fd, err
}
