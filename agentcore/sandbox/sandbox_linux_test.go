// Tests on the real kernel: the test binary, copied where the agent user can
// run it, is the helper and the probe; what the probe may do inside a
// sandbox is compared with what it does outside one (the control run), as
// the agent user (started by root with a credential) and as root itself.

package sandbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// agentUser is the unprivileged user the uid-switched tests run as (the
// default host.user; scripts/test.sh creates it too).
const agentUser = "threadline-agent"

// needAgentUser returns the agent user's credential, creating the user
// when missing. Switching users needs root: without it t is skipped.
func needAgentUser(t testing.TB) *syscall.Credential {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("running as %s needs root", agentUser)
	}
	u, err := user.Lookup(agentUser)
	if err != nil {
		out, addErr := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/"+agentUser, agentUser).CombinedOutput()
		// Another package's tests may have created it meanwhile: look it up
		// again whatever useradd said.
		if u, err = user.Lookup(agentUser); err != nil {
			t.Fatalf("useradd %s: %v: %s (then: %v)", agentUser, addErr, out, err)
		}
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}
}

// fixture is a host as a sandboxed run sees it: its chat's workspace, a
// sibling chat's, the bot's data, a read-only directory, TCP listeners on
// an allowed and a denied port, an abstract and a pathname unix socket,
// and a process of the same user outside the sandbox.
type fixture struct {
	cred             *syscall.Credential // nil: root, the test's own user
	base, exe        string
	chatA, chatB     string
	secretB, botDB   string
	ro, roFile       string
	scratch          string
	allowed, denied  int
	abstract, socket string
	outsider         int
}

// newFixture builds the fixture, its files owned by cred's user (root's
// for nil). Everything is readable to that user by its mode: what the
// sandbox denies, it denies by Landlock, not by file permissions.
func newFixture(t *testing.T, cred *syscall.Credential) *fixture {
	t.Helper()
	f := &fixture{cred: cred, base: shared(t)}
	mk := func(rel string, dir bool) string {
		p := filepath.Join(f.base, rel)
		var err error
		if dir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte(rel), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if cred != nil {
			if err := os.Chown(p, int(cred.Uid), int(cred.Gid)); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	f.exe = copyExe(t, mk("bin", true), "sandbox.test")
	mk("work", true)
	f.chatA = mk("work/chatA", true)
	f.chatB = mk("work/chatB", true)
	f.secretB = mk("work/chatB/secret", false)
	mk("data", true)
	f.botDB = mk("data/threadline.db", false)
	f.ro = mk("ro", true)
	f.roFile = mk("ro/file", false)
	f.scratch = mk("scratch", true)

	f.allowed, f.denied = listenTCP(t), listenTCP(t)
	f.abstract = fmt.Sprintf("@threadline-sandbox-test-%d-%s", os.Getpid(), t.Name())
	listenUnix(t, f.abstract)
	f.socket = filepath.Join(mk("sock", true), "s")
	listenUnix(t, f.socket)
	if err := os.Chmod(f.socket, 0o777); err != nil {
		t.Fatal(err)
	}
	f.outsider = startOutsider(t, cred)
	return f
}

// policy is the sandbox of chat A.
func (f *fixture) policy() Policy {
	return Policy{
		ReadWrite:  []string{f.chatA},
		ReadOnly:   append(SystemReadOnly(), filepath.Dir(f.exe), f.ro),
		Devices:    SystemDevices(),
		Terminals:  SystemTerminals(),
		ConnectTCP: []uint16{uint16(f.allowed)},
		BindTCP:    []uint16{0},
		Scope:      true,
		Forbidden:  []string{filepath.Dir(f.botDB)},
	}
}

// probe runs the probe with ops, in the sandbox of p or (nil) directly,
// as f's user, with ambient capabilities caps, and returns its results by
// op.
func (f *fixture) probe(t *testing.T, p *Policy, caps []uintptr, ops ...string) map[string]probeResult {
	t.Helper()
	args := append([]string{"probe"}, ops...)
	cmd := exec.CommandContext(t.Context(), f.exe, args...)
	if p != nil {
		path, argv, err := Command([]string{f.exe, "sandbox"}, *p, f.exe, args)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Path, cmd.Args = path, argv
	}
	cmd.Dir = f.chatA
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.cred, AmbientCaps: caps}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v\n%s", err, stderr.String())
	}
	var res []probeResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("probe output %q: %v", out, err)
	}
	m := map[string]probeResult{}
	for _, r := range res {
		m[r.Op] = r
	}
	return m
}

// TestSandbox shows what a sandboxed process may and may not do, as the
// agent user and as root, against a control run of the same probe outside
// the sandbox.
func TestSandbox(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name string
		cred func(testing.TB) *syscall.Credential
	}{
		{"agent-user", needAgentUser},
		{"same-uid", func(t testing.TB) *syscall.Credential {
			if os.Geteuid() != 0 {
				t.Skip("the test starts probes with ambient capabilities, which needs root")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cred(t))
			p := f.policy()
			in, out := f.probe(t, &p, nil, f.ops("in")...), f.probe(t, nil, nil, f.ops("out")...)
			for _, c := range f.cases() {
				if got := out[c.op("out")].Err; got != c.out {
					t.Errorf("outside the sandbox %s: %s, want %s", c.op("out"), got, c.out)
				}
				if got := in[c.op("in")].Err; got != c.in {
					t.Errorf("in the sandbox %s: %s, want %s", c.op("in"), got, c.in)
				}
			}
			for _, op := range f.gaps() {
				t.Logf("known gap: %s in the sandbox: %s (outside: %s)", op, in[op].Err, out[op].Err)
			}
			st := parseStatus(in["status"].Out)
			if st["NoNewPrivs"] != "1" {
				t.Errorf("NoNewPrivs = %q in the sandbox, want 1", st["NoNewPrivs"])
			}
			for _, k := range []string{"CapAmb", "CapInh"} {
				if st[k] != "0000000000000000" {
					t.Errorf("%s = %s in the sandbox, want none", k, st[k])
				}
			}
			if f.cred != nil && st["CapEff"] != "0000000000000000" {
				t.Errorf("CapEff = %s as %s, want none", st["CapEff"], agentUser)
			}
		})
	}
}

// probeCase is one probe operation and its outcome in the sandbox and
// outside it. Its op may hold %[1]s, the run's name ("in" or "out"), so
// that the two runs create different files.
type probeCase struct{ format, in, out string }

func (c probeCase) op(run string) string {
	if !strings.Contains(c.format, "%[1]s") {
		return c.format
	}
	return fmt.Sprintf(c.format, run)
}

// cases are what TestSandbox checks, in order.
func (f *fixture) cases() []probeCase {
	self, outsider := strconv.Itoa(os.Getpid()), strconv.Itoa(f.outsider)
	allowed, denied := strconv.Itoa(f.allowed), strconv.Itoa(f.denied)
	a := func(rel string) string { return filepath.Join(f.chatA, rel) }
	cs := []probeCase{
		// The chat's own workspace: everything, renames across directories
		// included (git moves objects so).
		{"write:" + a("%[1]s.txt"), "ok", "ok"},
		{"read:" + a("%[1]s.txt"), "ok", "ok"},
		{"mkdir:" + a("%[1]s.d"), "ok", "ok"},
		{"write:" + a("%[1]s.d/obj"), "ok", "ok"},
		{"rename:" + a("%[1]s.d/obj") + ">" + a("%[1]s.obj"), "ok", "ok"},
		{"list:" + f.chatA, "ok", "ok"},
		// Read-only directories and the system.
		{"list:" + f.ro, "ok", "ok"},
		{"read:" + f.roFile, "ok", "ok"},
		{"write:" + filepath.Join(f.ro, "%[1]s"), "EACCES", "ok"},
		{"write:" + f.roFile, "EACCES", "ok"},
		{"read:/etc/passwd", "ok", "ok"},
		{"exec:/bin/true", "ok", "ok"},
		{"write:/dev/null", "ok", "ok"},
		// Another chat's workspace, the bot's data, a directory outside the
		// policy: denied, to the agent's children too.
		{"read:" + f.secretB, "EACCES", "ok"},
		{"list:" + f.chatB, "EACCES", "ok"},
		{"write:" + filepath.Join(f.chatB, "%[1]s"), "EACCES", "ok"},
		{"sub:read:" + f.secretB, "EACCES", "ok"},
		{"read:" + f.botDB, "EACCES", "ok"},
		{"list:" + filepath.Dir(f.botDB), "EACCES", "ok"},
		{"write:" + filepath.Join(f.scratch, "%[1]s"), "EACCES", "ok"},
		// TCP: connect to the listed port only; bind to an ephemeral port
		// only (the denied port is in use: outside, bind says so).
		{"connect:" + allowed, "ok", "ok"},
		{"connect:" + denied, "EACCES", "ok"},
		{"sub:connect:" + denied, "EACCES", "ok"},
		{"bind:" + denied, "EACCES", "EADDRINUSE"},
		{"bind:0", "ok", "ok"},
		// Scopes: no abstract socket, no signal outside the sandbox; and no
		// ptrace access to a process of the same user outside it.
		{"abstract:" + f.abstract, "EPERM", "ok"},
		{"kill:" + outsider, "EPERM", "ok"},
		{"kill:" + self, "EPERM", "ok"},
		{"ptrace:" + outsider, "EPERM", "ESRCH"}, // outside: attached, then not stopped to detach
		{"open:/proc/" + outsider + "/mem", "EACCES", "ok"},
		{"readlink:/proc/" + outsider + "/cwd", "EACCES", "ok"},
	}
	if f.cred != nil {
		// The agent user may not signal root's test process nor mount
		// anyway; it may not read the environment of its own user's process
		// outside the sandbox (root may: see gaps).
		for i, c := range cs {
			if c.format == "kill:"+self {
				cs[i].out = "EPERM"
			}
		}
		return append(cs,
			probeCase{"read:/proc/" + outsider + "/environ", "EACCES", "ok"},
			probeCase{"mount:" + f.scratch, "EPERM", "EPERM"})
	}
	return append(cs, probeCase{"mount:" + f.scratch, "EPERM", "ok"})
}

// gaps are operations the sandbox does not deny (see the package
// documentation): logged, not checked.
func (f *fixture) gaps() []string {
	g := []string{"mptcp:" + strconv.Itoa(f.denied), "mptcpbind:" + strconv.Itoa(f.denied+1), "unix:" + f.socket}
	if f.cred == nil {
		g = append(g, "read:/proc/"+strconv.Itoa(f.outsider)+"/environ")
	}
	return g
}

// ops are the probe's operations for run ("in" or "out").
func (f *fixture) ops(run string) []string {
	var ops []string
	for _, c := range f.cases() {
		ops = append(ops, c.op(run))
	}
	return append(append(ops, f.gaps()...), "status")
}

// TestApply restricts a whole Go process with Apply, as the agent user:
// the thread that called it and one that existed before are both confined.
func TestApply(t *testing.T) {
	needLandlock(t)
	f := newFixture(t, needAgentUser(t))
	p := f.policy()
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []probeCase{
		{"write:" + filepath.Join(f.chatA, "apply"), "ok", ""},
		{"read:" + f.roFile, "ok", ""},
		{"read:" + f.secretB, "EACCES", ""},
		{"read:" + f.botDB, "EACCES", ""},
		{"connect:" + strconv.Itoa(f.allowed), "ok", ""},
		{"connect:" + strconv.Itoa(f.denied), "EACCES", ""},
		{"abstract:" + f.abstract, "EPERM", ""},
		{"kill:" + strconv.Itoa(f.outsider), "EPERM", ""},
	}
	ops := []string{"threadstatus"}
	for _, c := range want {
		ops = append(ops, c.format)
	}
	cmd := exec.CommandContext(t.Context(), f.exe, append([]string{"apply", string(js)}, ops...)...)
	cmd.Dir, cmd.Env = f.chatA, childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: f.cred}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("apply: %v: %s", err, stderr.String())
	}
	var res applyResults
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("apply output %q: %v", out, err)
	}
	t.Log(res.Report)
	for thread, rs := range map[string][]probeResult{"calling thread": res.Main, "earlier thread": res.Other} {
		if len(rs) != len(ops) {
			t.Fatalf("%s: %d results, want %d", thread, len(rs), len(ops))
		}
		if st := parseStatus(rs[0].Out); st["NoNewPrivs"] != "1" {
			t.Errorf("%s: NoNewPrivs %q, want 1", thread, st["NoNewPrivs"])
		}
		for i, c := range want {
			if got := rs[i+1].Err; got != c.in {
				t.Errorf("%s: %s: %s, want %s", thread, c.format, got, c.in)
			}
		}
	}
}

// TestAmbientCapsCleared starts the helper with an ambient capability (as
// a relay passes CAP_SETUID to the agent's start): the agent has none.
func TestAmbientCapsCleared(t *testing.T) {
	needLandlock(t)
	for _, tc := range []struct {
		name string
		cred func(testing.TB) *syscall.Credential
	}{
		{"agent-user", needAgentUser},
		{"same-uid", func(t testing.TB) *syscall.Credential {
			if os.Geteuid() != 0 {
				t.Skip("ambient capabilities need root to grant")
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.cred(t))
			const capNetBindService = 10
			caps := []uintptr{capNetBindService}
			out := parseStatus(f.probe(t, nil, caps, "status")["status"].Out)
			if out["CapAmb"] != "0000000000000400" {
				t.Fatalf("control: CapAmb = %q, want 0000000000000400 (CAP_NET_BIND_SERVICE)", out["CapAmb"])
			}
			p := f.policy()
			in := parseStatus(f.probe(t, &p, caps, "status")["status"].Out)
			for _, k := range []string{"CapAmb", "CapInh"} {
				if in[k] != "0000000000000000" {
					t.Errorf("%s = %s in the sandbox, want none", k, in[k])
				}
			}
			if f.cred != nil {
				for _, k := range []string{"CapPrm", "CapEff"} {
					if in[k] != "0000000000000000" {
						t.Errorf("%s = %s as %s in the sandbox, want none", k, in[k], agentUser)
					}
				}
			}
		})
	}
}

// TestRefusesPrivilegedHelper runs the helper from copies of the test
// binary that grant privileges by their file, a capability (setcap
// cap_setuid+ep) and set-uid root, as the agent user: both refuse, and an
// unprivileged copy runs.
func TestRefusesPrivilegedHelper(t *testing.T) {
	needLandlock(t)
	cred := needAgentUser(t)
	f := newFixture(t, cred)
	p := f.policy()
	dir := filepath.Dir(f.exe)
	run := func(exe string) (int, string) {
		t.Helper()
		path, argv, err := Command([]string{exe, "sandbox"}, p, "/bin/true", nil)
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(t.Context(), path)
		cmd.Args = argv
		cmd.Env = childEnv()
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err = cmd.Run()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), stderr.String()
	}
	if code, stderr := run(f.exe); code != 0 {
		t.Fatalf("the plain helper: exit %d: %s", code, stderr)
	}

	capped := copyExe(t, dir, "capped")
	setcap(t, capped)
	setuid := copyExe(t, dir, "setuid")
	if err := os.Chmod(setuid, 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	for _, exe := range []string{capped, setuid} {
		code, stderr := run(exe)
		if code != 126 || !strings.Contains(stderr, ErrSecureExec.Error()) {
			t.Errorf("%s: exit %d, stderr %q; want 126 and %q", filepath.Base(exe), code, stderr, ErrSecureExec)
		}
	}
}

// setcap gives exe the file capability cap_setuid+ep.
func setcap(t *testing.T, exe string) {
	t.Helper()
	bin, err := exec.LookPath("setcap")
	if err != nil {
		t.Fatalf("setcap is missing (apt-get install libcap2-bin): %v", err)
	}
	if out, err := exec.Command(bin, "cap_setuid+ep", exe).CombinedOutput(); err != nil {
		t.Fatalf("setcap: %v: %s", err, out)
	}
}

// TestHelperErrors: the helper refuses a malformed command line and a
// policy granting a symbolic link's target it forbids, executing nothing.
func TestHelperErrors(t *testing.T) {
	needLandlock(t)
	dir := shared(t)
	exe := copyExe(t, dir, "sandbox.test")
	marker := filepath.Join(dir, "ran")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	good := Policy{ReadOnly: SystemReadOnly(), ReadWrite: []string{dir}}
	js := func(p Policy) string {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	touch := []string{"/usr/bin/touch", marker}
	for name, args := range map[string][]string{
		"no --":           append([]string{js(good), "x"}, touch...),
		"relative bin":    {js(good), "--", "touch", marker},
		"unknown field":   append([]string{`{"read_write":["/tmp"],"allow_all":true}`, "--"}, touch...),
		"bad json":        append([]string{`{`, "--"}, touch...),
		"relative path":   append([]string{js(Policy{ReadOnly: []string{"usr"}}), "--"}, touch...),
		"symlinked rw":    append([]string{js(Policy{ReadOnly: SystemReadOnly(), ReadWrite: []string{link}}), "--"}, touch...),
		"forbidden by ro": append([]string{js(Policy{ReadOnly: append(SystemReadOnly(), link), Forbidden: []string{dir}}), "--"}, touch...),
		"bin not granted": {js(Policy{ReadWrite: []string{dir}}), "--", "/usr/bin/touch", marker},
	} {
		cmd := exec.CommandContext(t.Context(), exe, append([]string{"sandbox"}, args...)...)
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 126 {
			t.Errorf("%s: %v, want exit 126: %s", name, err, out)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s: the command ran", name)
		}
		t.Logf("%s: %s", name, bytes.TrimSpace(out))
	}
	// The same helper with a good policy runs it.
	if out, err := exec.CommandContext(t.Context(), exe, append([]string{"sandbox", js(good), "--"}, touch...)...).CombinedOutput(); err != nil {
		t.Fatalf("good policy: %v: %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal(err)
	}
}

// childEnv is the environment of the test's child processes: the race
// detector's exit pause (a second by default) off, since the test binary is
// the helper and the probe.
func childEnv() []string {
	return append(os.Environ(), "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// shared returns a new directory every user may enter and list.
func shared(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "tlsandbox")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyExe copies the test binary to dir/name, mode 0755 (go test's build
// directory is root's alone).
func copyExe(t testing.TB, dir, name string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, name)
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dst
}

// listenTCP accepts (and closes) connections on a loopback port until the
// test ends, and returns the port.
func listenTCP(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l)
	return l.Addr().(*net.TCPAddr).Port
}

// listenUnix accepts connections on a unix socket (name starting with @:
// abstract) until the test ends.
func listenUnix(t testing.TB, name string) {
	t.Helper()
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatal(err)
	}
	serve(t, l)
}

func serve(t testing.TB, l net.Listener) {
	done := make(chan struct{})
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// startOutsider starts a process as cred's user, outside any sandbox,
// that lives until the test ends (cat, reading a pipe), and returns its pid.
func startOutsider(t testing.TB, cred *syscall.Credential) int {
	t.Helper()
	cmd := exec.Command("/bin/cat")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// parseStatus reads "Key: value" lines (fields joined by one space).
func parseStatus(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}
