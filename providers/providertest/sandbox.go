// The sandbox every real-CLI e2e run starts in, as production starts a run
// with host.isolation: sandbox: as the agent user (procrun.WithIsolation),
// through the sandbox helper (procrun.WithSandbox; the test binary is the
// helper, see RunSandboxIfAsked), with a policy built like
// agentcore/execution's: it may write its working directory, the CLI's
// home and configuration directories the test's setup made and a fresh
// TMPDIR of the run; read the system, the CLI's installation and the
// shared caches the tests use; connect over TCP to 443, 80, the fake model
// server's port and a loopback port of its own (agent.RunRequest.LocalPort),
// and bind only ports the kernel picks and that port.

package providertest

import (
	"context"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

// SandboxEnv set to "off" runs the e2e tests' CLIs as before the sandbox:
// unsandboxed, as this process's user (for debugging). Unset, or anything
// else, sandboxes them (the default, in CI).
const SandboxEnv = "THREADLINE_TEST_SANDBOX"

// helperEnv names the shared copy of the test binary (see helperPath): set
// by the test process for the netns children it starts.
const helperEnv = "THREADLINE_PROVIDERTEST_HELPER"

// SandboxOff reports whether THREADLINE_TEST_SANDBOX=off.
func SandboxOff() bool { return os.Getenv(SandboxEnv) == "off" }

// RunSandboxIfAsked, called first in TestMain, makes the test binary the
// sandbox helper (`<test binary> sandbox POLICY_JSON -- BIN ARGS`, as
// `threadline sandbox`): it confines itself and executes BIN, or exits 126
// saying why it could not. Otherwise it returns at once.
func RunSandboxIfAsked() {
	if len(os.Args) < 2 || os.Args[1] != "sandbox" {
		return
	}
	err := sandbox.Exec(os.Args[2:], os.Environ())
	fmt.Fprintln(os.Stderr, "providertest sandbox helper:", err)
	os.Exit(126)
}

// Main is the TestMain of a provider package: the test binary acts as the
// sandbox helper or a relay when started as one (RunSandboxIfAsked,
// RunRelayIfAsked), else runs the tests and removes the copy of itself the
// sandboxed runs executed.
func Main(m *testing.M) {
	RunSandboxIfAsked()
	RunRelayIfAsked()
	code := m.Run()
	removeHelper()
	os.Exit(code)
}

var (
	helperMu      sync.Mutex
	helperCopy    string // made by this process
	helperCleanup bool   // this process removes it (Main)
)

// helperPath is a copy of this test binary that the agent user may execute
// (go test's build directory is root's, mode 0700): the sandbox helper, and
// what a test's CLI starts when it runs the test binary (SelfExe). A test
// process makes it once and passes it on to its netns children (helperEnv);
// a child without one makes its own, removed with t.
func helperPath(t testing.TB) string {
	t.Helper()
	helperMu.Lock()
	defer helperMu.Unlock()
	if helperCopy != "" {
		return helperCopy
	}
	if p := os.Getenv(helperEnv); p != "" {
		if _, err := os.Stat(p); err == nil {
			helperCopy = p
			return p
		}
	}
	dir, p, err := procruntest.ShareExecutable("providertest-helper")
	if err != nil {
		if dir != "" {
			os.RemoveAll(dir)
		}
		t.Fatalf("sandbox helper: %v", err)
	}
	helperCopy = p
	if os.Getenv(EnvInNetns) == "1" {
		t.Cleanup(func() {
			helperMu.Lock()
			defer helperMu.Unlock()
			os.RemoveAll(dir)
			helperCopy = ""
		})
		return p
	}
	// The outer test process: its netns children use it too; Main removes
	// it after the last test.
	helperCleanup = true
	os.Setenv(helperEnv, p)
	return p
}

// removeHelper removes the copy this test process made for its children.
func removeHelper() {
	helperMu.Lock()
	defer helperMu.Unlock()
	if helperCleanup && helperCopy != "" {
		os.RemoveAll(filepath.Dir(helperCopy))
		helperCopy, helperCleanup = "", false
		os.Unsetenv(helperEnv)
	}
}

// prepareSandbox readies, in the test process, what its netns children's
// sandboxes share: the helper's copy (made once, passed on). Without the
// sandbox it does nothing.
func prepareSandbox(t testing.TB) {
	t.Helper()
	if !SandboxOff() && os.Getenv(EnvInNetns) != "1" {
		helperPath(t)
	}
}

// SelfExe is the test binary as a CLI under test may execute it (a fake MCP
// server the CLI starts): the helper's copy when the test is sandboxed
// (the agent user cannot reach go test's build directory), else the binary
// itself.
func SelfExe(t testing.TB) string {
	t.Helper()
	if boxOf(t) != nil {
		return helperPath(t)
	}
	return os.Args[0]
}

// box is the sandbox of one e2e test's runs.
type box struct {
	iso    *procrun.Isolation // nil: this process cannot switch users
	helper string

	mu    sync.Mutex
	rw    []string // writable beside each run's cwd and TMPDIR
	ro    []string // readable beside the system
	ports []uint16 // connectable beside 443, 80 and the run's own port
	temp  string   // the root of t's temporary directories
	last  *sandbox.Policy
	runs  int
}

// boxes are the boxes by test name: a test's runs and its subtests' use
// its box.
var boxes sync.Map

// boxOf is the box of t, or of the nearest test above it, or nil.
func boxOf(t testing.TB) *box {
	for name := t.Name(); ; {
		if b, ok := boxes.Load(name); ok {
			return b.(*box)
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// sandboxFor returns t's box, making it on first use; nil with the
// sandbox off. Without Landlock the test is skipped (failed under
// THREADLINE_E2E=1). As root (in the initial user namespace) the runs
// start as the agent user (procruntest.NeedAgentUser), else as this
// process's user.
func sandboxFor(t testing.TB) *box {
	t.Helper()
	if SandboxOff() {
		return nil
	}
	if b, ok := boxes.Load(t.Name()); ok {
		return b.(*box)
	}
	if ok, why := sandbox.Available(); !ok {
		SkipOrFail(t, "e2e runs are sandboxed: %s (%s=off runs them unsandboxed)", why, SandboxEnv)
	}
	b := &box{helper: helperPath(t), temp: filepath.Dir(t.TempDir())}
	if realRoot() {
		u := procruntest.NeedAgentUser(t)
		iso, err := procrun.NewIsolation(u.Username)
		if err != nil {
			t.Fatal(err)
		}
		b.iso = iso
	}
	b.ro = append(b.ro, filepath.Dir(b.helper))
	boxes.Store(t.Name(), b)
	t.Cleanup(func() {
		boxes.Delete(t.Name())
		switch {
		case t.Failed():
			t.Log(b.summary())
		case t.Skipped():
		case b.count() == 0:
			// A test that runs its CLI unsandboxed would pass unnoticed.
			t.Errorf("a sandboxed test started no run through its sandbox (Confine): %s", b.summary())
		default:
			t.Logf("%d runs sandboxed as %s", b.count(), b.user())
		}
	})
	return b
}

// realRoot reports whether this process is root in the initial user
// namespace (not the mapped root of `unshare -r`): it may switch users.
func realRoot() bool {
	if os.Geteuid() != 0 {
		return false
	}
	m, err := os.ReadFile("/proc/self/uid_map")
	return err == nil && strings.Join(strings.Fields(string(m)), " ") == "0 0 4294967295"
}

// IsSandboxed reports whether t's runs start in a sandbox (Confine).
func IsSandboxed(t testing.TB) bool { return boxOf(t) != nil }

// Sandboxed declares what t's sandboxed runs need of a CLI's environment
// env, making t's sandbox if it has none (a no-op with the sandbox off):
// the directories env names under t's temporary directories (HOME, the
// XDG directories, CODEX_HOME, ...: the whole t.TempDir() each is in) and
// dirs become writable, handed to the agent user at each run; env gets a
// HOME and a TMPDIR of its own when it has none (the agent user's home and
// /tmp are outside the sandbox; a run's own TMPDIR wins, see Confine); the
// ports of the URLs in env become connectable. Harness.Launch calls it.
func Sandboxed(t testing.TB, env map[string]string, dirs ...string) {
	t.Helper()
	b := sandboxFor(t)
	if b == nil {
		return
	}
	if env != nil && env["HOME"] == "" {
		env["HOME"] = t.TempDir()
	}
	if env != nil && env["TMPDIR"] == "" {
		// For what starts outside a run (a catalog); a run gets its own.
		env["TMPDIR"] = t.TempDir()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := env[k]
		if strings.HasPrefix(v, "http://") || strings.HasPrefix(v, "https://") {
			b.ports = append(b.ports, sandbox.PortsOf(v)...)
			continue
		}
		if !filepath.IsAbs(v) || strings.ContainsRune(v, filepath.ListSeparator) {
			continue
		}
		if rel, err := filepath.Rel(b.temp, filepath.Clean(v)); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			dirs = append(dirs, filepath.Join(b.temp, strings.Split(rel, string(filepath.Separator))[0]))
		}
	}
	for _, d := range dirs {
		if !slices.Contains(b.rw, d) {
			b.rw = append(b.rw, d)
		}
	}
}

// SandboxReads lets t's sandboxed runs read paths (a cache shared between
// the tests and scripts/install-agents.sh), making t's sandbox if it has
// none; a no-op with the sandbox off.
func SandboxReads(t testing.TB, paths ...string) {
	t.Helper()
	if b := sandboxFor(t); b != nil {
		b.mu.Lock()
		b.ro = append(b.ro, paths...)
		b.mu.Unlock()
	}
}

// SandboxConnects lets t's sandboxed runs connect to the ports of urls (a
// model server whose address is in the CLI's configuration file, not its
// environment), making t's sandbox if it has none; a no-op with the
// sandbox off.
func SandboxConnects(t testing.TB, urls ...string) {
	t.Helper()
	if b := sandboxFor(t); b != nil {
		b.mu.Lock()
		b.ports = append(b.ports, sandbox.PortsOf(urls...)...)
		b.mu.Unlock()
	}
}

// CheckPeers fails t at its end when a process of another user than its
// runs' reached its model server (peers, the server's PeerUIDs): a CLI
// started outside the uid switch, or one whose user was not found. With
// the sandbox off it does nothing. Setup calls it for its fake.
func CheckPeers(t testing.TB, peers func() []int) {
	t.Helper()
	b := boxOf(t)
	if b == nil {
		return
	}
	want := os.Getuid()
	if b.iso != nil {
		want = int(b.iso.UID)
	}
	t.Cleanup(func() {
		for _, uid := range peers() {
			if uid != want {
				t.Errorf("a process of uid %d reached the model server, want only the runs' %s", uid, b.user())
			}
		}
	})
}

// Confine readies one run of t for its sandbox (as agentcore/execution
// does for a sandboxed chat): ctx carries the uid switch and the sandbox,
// req a fresh TMPDIR in its environment and a loopback port of its own
// (LocalPort), and the run's working directory and writable directories
// are handed to the agent user. Without a sandbox it returns ctx and req
// as they are. Run and RunCancelledOnFile call it; a test that starts the
// CLI otherwise (a catalog, a probe) calls it itself.
func Confine(t testing.TB, ctx context.Context, req agent.RunRequest) (context.Context, agent.RunRequest) {
	t.Helper()
	ctx, req, err := confine(t, ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, req
}

// confine is Confine returning its error (from any goroutine).
func confine(t testing.TB, ctx context.Context, req agent.RunRequest) (context.Context, agent.RunRequest, error) {
	t.Helper()
	b := boxOf(t)
	if b == nil {
		return ctx, req, nil
	}
	sb, req, err := b.confine(t, req)
	if err != nil {
		return ctx, req, fmt.Errorf("sandbox (%s=off runs unsandboxed): %w", SandboxEnv, err)
	}
	t.Logf("sandboxed run as %s: cwd %s, TMPDIR %s, own port %d", b.user(), req.Cwd, req.Env["TMPDIR"], req.LocalPort)
	return procrun.WithSandbox(procrun.WithIsolation(ctx, b.iso), sb), req, nil
}

// ProbeConfine is the registry.ProbeOptions.Confine of t's probes (version,
// model listing): each starts as a run of t does (Confine), in a working
// directory and with a HOME of its own, as production's detection does;
// nil with the sandbox off.
func ProbeConfine(t testing.TB) func(ctx context.Context, d registry.Definition, env []string) (context.Context, []string, string, error) {
	t.Helper()
	if sandboxFor(t) == nil {
		return nil
	}
	home, cwd := t.TempDir(), t.TempDir()
	Sandboxed(t, nil, home)
	return func(ctx context.Context, _ registry.Definition, env []string) (context.Context, []string, string, error) {
		ctx, req, err := confine(t, ctx, agent.RunRequest{Cwd: cwd})
		if err != nil {
			return ctx, nil, "", err
		}
		// The last of a key wins (os/exec).
		return ctx, append(slices.Clone(env), "HOME="+home, "TMPDIR="+req.Env["TMPDIR"]), cwd, nil
	}
}

func (b *box) confine(t testing.TB, req agent.RunRequest) (*procrun.Sandbox, agent.RunRequest, error) {
	tmp := filepath.Join(t.TempDir(), "tmp")
	b.mu.Lock()
	defer b.mu.Unlock()
	b.runs++
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, req, err
	}
	rw := slices.Concat(b.rw, []string{tmp})
	if req.Cwd != "" {
		rw = append(rw, req.Cwd)
	}
	p := sandbox.Policy{
		ReadOnly:  slices.Concat(sandbox.SystemReadOnly(), b.ro),
		Devices:   sandbox.SystemDevices(),
		Terminals: sandbox.SystemTerminals(),
		Scope:     true,
	}
	for _, d := range rw {
		if err := b.handOver(d); err != nil {
			return nil, req, err
		}
		real, err := filepath.EvalSymlinks(d)
		if err != nil {
			return nil, req, err
		}
		p.ReadWrite = append(p.ReadWrite, real)
	}
	if req.LocalPort == 0 {
		port, err := freePort()
		if err != nil {
			return nil, req, fmt.Errorf("a port of the run's own: %w", err)
		}
		req.LocalPort = port
	}
	own := uint16(req.LocalPort)
	ports := slices.Concat(sandbox.DefaultConnectTCP(), b.ports, []uint16{own})
	slices.Sort(ports)
	p.ConnectTCP = slices.Compact(ports)
	p.BindTCP = []uint16{0, own}
	req.Env = maps.Clone(req.Env)
	if req.Env == nil {
		req.Env = map[string]string{}
	}
	req.Env["TMPDIR"] = tmp
	b.last = &p
	return &procrun.Sandbox{Helper: []string{b.helper, "sandbox"}, Policy: p}, req, nil
}

// handOver gives dir and everything in it to the agent user (the test
// wrote them as root: the setup's configuration, a script for a tool) and
// makes the temporary directories above it traversable (t.TempDir's root
// is 0700). It runs before a run starts, when no process of the test's
// earlier runs is left (the left-behind checks), and follows no symbolic
// link. Without a uid switch it does nothing.
func (b *box) handOver(dir string) error {
	if b.iso == nil {
		return nil
	}
	return giveTo(dir, int(b.iso.UID), int(b.iso.GID))
}

// giveTo gives dir and everything in it to uid and gid, following no
// symbolic link, and makes the directories above it in the temporary
// directory traversable.
func giveTo(dir string, uid, gid int) error {
	tmp := filepath.Clean(os.TempDir())
	for d := filepath.Dir(dir); strings.HasPrefix(d, tmp+string(filepath.Separator)); d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
				return err
			}
		}
	}
	return filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(path, uid, gid)
	})
}

// freePort is a loopback TCP port free now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// user is who t's runs start as: the agent user, or this process's.
func (b *box) user() string {
	if b.iso != nil {
		return fmt.Sprintf("%s (uid %d)", b.iso.User, b.iso.UID)
	}
	return processUser(os.Getuid())
}

// processUser is how user says that runs start as this process's user,
// of uid.
func processUser(uid int) string { return fmt.Sprintf("uid %d (this process's user)", uid) }

// count is the number of runs t's box readied.
func (b *box) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.runs
}

// summary says how t's runs were sandboxed, for a failed test's log.
func (b *box) summary() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var sb strings.Builder
	fmt.Fprintf(&sb, "the CLI ran sandboxed (%s=off runs it unsandboxed, as root), as %s, %d runs", SandboxEnv, b.user(), b.runs)
	if b.last == nil {
		return sb.String()
	}
	p := *b.last
	fmt.Fprintf(&sb, "; last run's policy: read-write %q; read-only beside the system %q (and the CLI's installation); connect %v; bind %v",
		p.ReadWrite, b.ro, p.ConnectTCP, p.BindTCP)
	if r, err := sandbox.Plan(p); err != nil {
		fmt.Fprintf(&sb, "; plan: %v", err)
	} else {
		fmt.Fprintf(&sb, "; %s", r)
	}
	return sb.String()
}
