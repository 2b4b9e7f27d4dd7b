// Tests of agent isolation with real processes and a real agent user: the
// test binary, copied where that user can run it, re-executed as the agent.

package procrun

import (
	"bufio"
	"context"
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
	"testing"
	"time"
)

// agentUserName is the user the isolation tests run agents as.
const agentUserName = "threadline-agent"

// needAgentUser returns the agent user's isolation, creating the user when
// missing. It needs root; without root the test is skipped (failed under
// THREADLINE_E2E=1, where isolation must be proven).
func needAgentUser(t testing.TB) *Isolation {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("THREADLINE_E2E") == "1" {
			t.Fatal("isolation tests need root (to create and switch to the agent user)")
		}
		t.Skip("isolation tests need root")
	}
	if _, err := user.Lookup(agentUserName); err != nil {
		out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/"+agentUserName, agentUserName).CombinedOutput()
		if err != nil {
			t.Fatalf("useradd %s: %v: %s", agentUserName, err, out)
		}
	}
	iso, err := NewIsolation(agentUserName)
	if err != nil {
		t.Fatal(err)
	}
	if iso.Setpriv != "" {
		t.Fatalf("root should apply the credential directly, got setpriv %q", iso.Setpriv)
	}
	return iso
}

// sharedExe copies the test binary into a directory every user may enter,
// so that it can run as the agent user (go test's build dir is root's).
func sharedExe(t testing.TB) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tliso")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst := filepath.Join(dir, "procrun.test")
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

// procStatus reads the identity lines of /proc/<pid>/status.
func procStatus(t testing.TB, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	return parseStatus(string(b))
}

func parseStatus(s string) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	return out
}

// checkIdentity fails t unless st is the status of a process running as iso's
// user with no capability at all.
func checkIdentity(t *testing.T, st map[string]string, iso *Isolation) {
	t.Helper()
	uid, gid := strconv.Itoa(int(iso.UID)), strconv.Itoa(int(iso.GID))
	if want := strings.Join([]string{uid, uid, uid, uid}, " "); st["Uid"] != want {
		t.Errorf("Uid (real, effective, saved, fs) = %q, want %q", st["Uid"], want)
	}
	if want := strings.Join([]string{gid, gid, gid, gid}, " "); st["Gid"] != want {
		t.Errorf("Gid = %q, want %q", st["Gid"], want)
	}
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if st[k] != "0000000000000000" {
			t.Errorf("%s = %q, want no capability", k, st[k])
		}
	}
	for _, g := range strings.Fields(st["Groups"]) {
		if g == "0" {
			t.Errorf("the agent kept root's group: Groups %q", st["Groups"])
		}
	}
}

// isoChild runs the isolation tests' child modes.
func isoChild(mode string) int {
	out := json.NewEncoder(os.Stdout)
	switch mode {
	case "ident": // report identity, then wait for stdin's end
		b, _ := os.ReadFile("/proc/self/status")
		wd, _ := os.Getwd()
		_ = out.Encode(map[string]string{
			"status": string(b), "home": os.Getenv("HOME"), "user": os.Getenv("USER"),
			"logname": os.Getenv("LOGNAME"), "xdg": os.Getenv("XDG_CONFIG_HOME"), "wd": wd,
		})
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "nodump": // a process that made itself non-dumpable (or not), until stdin ends
		if os.Getenv("NODUMP") == "1" {
			if err := SetNotDumpable(); err != nil {
				return 3
			}
		}
		_ = out.Encode(map[string]int{"pid": os.Getpid()})
		_, _ = io.Copy(io.Discard, os.Stdin)
	case "probe": // try to reach what an agent must not
		res := map[string]string{}
		try := func(name string, err error) {
			if err == nil {
				res[name] = "ok"
			} else {
				res[name] = err.Error()
			}
		}
		if p := os.Getenv("PROBE_FILE"); p != "" {
			_, err := os.ReadFile(p)
			try("file", err)
		}
		if p := os.Getenv("PROBE_PID"); p != "" {
			b, err := os.ReadFile("/proc/" + p + "/environ")
			if err == nil && len(b) == 0 {
				err = errors.New("empty environ")
			}
			try("environ", err)
			if err == nil {
				res["environ_text"] = string(b)
			}
		}
		if p := os.Getenv("PROBE_SOCK"); p != "" {
			try("sock", probeSocket(p))
		}
		if p := os.Getenv("PROBE_JOURNAL"); p != "" {
			_, err := os.ReadFile(p)
			try("journal", err)
		}
		_ = out.Encode(res)
	case "nbot": // a bot that is not root but holds ambient CAP_SETUID/SETGID
		return nonRootBot(out)
	case "secrets":
		return secretsChild()
	default:
		return 99
	}
	return 0
}

// probeSocket connects to a relay socket and asks for its status.
func probeSocket(path string) error {
	c, err := net.DialTimeout("unix", path, 5*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := c.Write([]byte(`{"op":"status"}` + "\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no reply: %w", err)
	}
	return errors.New("the relay answered: " + strings.TrimSpace(line))
}

// nonRootBot starts an isolated "ident" child the way a non-root bot does
// (through setpriv) and reports its own and the child's status.
func nonRootBot(out *json.Encoder) int {
	self, _ := os.ReadFile("/proc/self/status")
	iso, err := NewIsolation(os.Getenv("AGENT_USER"))
	if err != nil {
		_ = out.Encode(map[string]string{"err": err.Error()})
		return 0
	}
	exe, _ := os.Executable()
	p, err := Start(context.Background(), nil, Spec{Bin: exe, Env: []string{childEnv + "=ident"}, Stdin: true, Isolation: iso})
	if err != nil {
		_ = out.Encode(map[string]string{"err": err.Error()})
		return 0
	}
	var child map[string]string
	_ = p.Each(func(line []byte) error {
		if child == nil {
			_ = json.Unmarshal(line, &child)
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
			child["proc"] = string(st)
			_ = p.CloseStdin()
		}
		return nil
	})
	werr := p.Wait()
	_ = out.Encode(map[string]any{"self": string(self), "setpriv": iso.Setpriv, "child": child, "wait": fmt.Sprint(werr)})
	return 0
}

// startIdent starts an "ident" child under iso and returns its report and
// /proc status, read while it runs.
func startIdent(t *testing.T, exe string, iso *Isolation, env ...string) (map[string]string, map[string]string) {
	t.Helper()
	spec := Spec{Bin: exe, Env: append([]string{childEnv + "=ident"}, env...), Stdin: true, Isolation: iso}
	p, err := Start(context.Background(), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	var rep, st map[string]string
	err = p.Each(func(line []byte) error {
		if rep == nil {
			if err := json.Unmarshal(line, &rep); err != nil {
				return err
			}
			st = procStatus(t, p.Pid())
			return p.CloseStdin()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("wait: %v (stderr %q)", err, p.Stderr())
	}
	if rep == nil {
		t.Fatalf("no report from the child (stderr %q)", p.Stderr())
	}
	return rep, st
}

func TestIsolatedStartRunsAsAgentUser(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	botHome, _ := os.UserHomeDir()
	t.Setenv("XDG_CONFIG_HOME", "/root/.config-of-the-bot")
	inherited := []string{"HOME=" + botHome, "USER=root", "LOGNAME=root", "XDG_CONFIG_HOME=/root/.config-of-the-bot"}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed: %v", err)
	}
	via := map[string]*Isolation{"credential": iso}
	sp := *iso
	sp.Setpriv = setpriv
	via["setpriv"] = &sp
	for name, iso := range via {
		t.Run(name, func(t *testing.T) {
			rep, st := startIdent(t, exe, iso, inherited...)
			checkIdentity(t, st, iso)
			checkIdentity(t, parseStatus(rep["status"]), iso)
			if rep["home"] != iso.Home || rep["user"] != agentUserName || rep["logname"] != agentUserName {
				t.Errorf("HOME %q USER %q LOGNAME %q, want %q and %s", rep["home"], rep["user"], rep["logname"], iso.Home, agentUserName)
			}
			if rep["xdg"] != "" {
				t.Errorf("the bot's XDG_CONFIG_HOME reached the agent: %q", rep["xdg"])
			}
		})
	}
	t.Run("configured HOME kept", func(t *testing.T) {
		rep, _ := startIdent(t, exe, iso, "HOME=/tmp")
		if rep["home"] != "/tmp" {
			t.Errorf("HOME %q, want the configured /tmp", rep["home"])
		}
	})
	t.Run("from context", func(t *testing.T) {
		ctx := WithIsolation(context.Background(), iso)
		p, err := Start(ctx, nil, Spec{Bin: exe, Env: []string{childEnv + "=ident"}, Stdin: true})
		if err != nil {
			t.Fatal(err)
		}
		var st map[string]string
		_ = p.Each(func([]byte) error {
			if st == nil {
				st = procStatus(t, p.Pid())
				_ = p.CloseStdin()
			}
			return nil
		})
		if err := p.Wait(); err != nil {
			t.Fatal(err)
		}
		checkIdentity(t, st, iso)
	})
}

// TestIsolationFromNonRootBot runs the test binary as nobody with ambient
// CAP_SETUID and CAP_SETGID, as the systemd unit runs the bot: it starts the
// agent through setpriv, and the agent has no capability left.
func TestIsolationFromNonRootBot(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	cmd := exec.Command("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
		"--inh-caps=+setuid,+setgid", "--ambient-caps=+setuid,+setgid", "--", exe)
	cmd.Env = []string{childEnv + "=nbot", "AGENT_USER=" + agentUserName, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/"
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("non-root bot: %v: %s", err, b)
	}
	var rep struct {
		Err     string            `json:"err"`
		Self    string            `json:"self"`
		Setpriv string            `json:"setpriv"`
		Child   map[string]string `json:"child"`
		Wait    string            `json:"wait"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %q: %v", b, err)
	}
	if rep.Err != "" {
		t.Fatal(rep.Err)
	}
	self := parseStatus(rep.Self)
	if strings.Fields(self["Uid"])[0] == "0" || self["CapAmb"] != "00000000000000c0" {
		t.Fatalf("the bot is not a non-root process with ambient CAP_SETUID/SETGID: Uid %q CapAmb %q", self["Uid"], self["CapAmb"])
	}
	if rep.Setpriv == "" || rep.Wait != "<nil>" {
		t.Errorf("setpriv %q, wait %s", rep.Setpriv, rep.Wait)
	}
	checkIdentity(t, parseStatus(rep.Child["proc"]), iso)
	checkIdentity(t, parseStatus(rep.Child["status"]), iso)
}

func TestNewIsolationRefuses(t *testing.T) {
	if _, err := NewIsolation("surely-no-such-user-tl"); !errors.Is(err, ErrNoIsolation) {
		t.Errorf("missing user: %v", err)
	}
	if _, err := NewIsolation("root"); !errors.Is(err, ErrNoIsolation) || !strings.Contains(err.Error(), "unprivileged") {
		t.Errorf("root as agent user: %v", err)
	}
}

func TestAdmitUID(t *testing.T) {
	for _, tc := range []struct {
		peer, self uint32
		ok         bool
	}{{1000, 1000, true}, {0, 1000, true}, {995, 1000, false}, {1000, 0, false}} {
		if err := admitUID(tc.peer, tc.self); (err == nil) != tc.ok {
			t.Errorf("admitUID(%d, %d) = %v", tc.peer, tc.self, err)
		}
	}
}

// TestAgentCannotReachBot runs a probe as the agent user against a 0600 bot
// file, the bot's environ, a live relay's socket and journal.
func TestAgentCannotReachBot(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	dir, err := os.MkdirTemp("", "tlbot")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "bot.secret")
	if err := os.WriteFile(secretFile, []byte("bot-file-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A live relayed run of the bot, as another run's agent would find it.
	r := testRelay(t)
	rr := r.Run("other-run")
	p, err := Start(WithRelay(context.Background(), rr), nil, slowSpec(t, 1000, 50, 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Kill(); _ = p.Wait() })
	sock := filepath.Join(r.RunDir("other-run"), relaySock)
	probe := func(t *testing.T, env ...string) map[string]string {
		t.Helper()
		return runProbe(t, Spec{Bin: exe, Env: append([]string{childEnv + "=probe"}, env...), Isolation: iso})
	}
	t.Run("private paths", func(t *testing.T) {
		res := probe(t, "PROBE_FILE="+secretFile, "PROBE_PID="+strconv.Itoa(os.Getpid()), "PROBE_SOCK="+sock,
			"PROBE_JOURNAL="+filepath.Join(r.RunDir("other-run"), relayOut))
		for _, k := range []string{"file", "environ", "sock", "journal"} {
			if !strings.Contains(res[k], "permission denied") {
				t.Errorf("%s: %q, want permission denied", k, res[k])
			}
		}
	})
	t.Run("relay refuses a foreign peer", func(t *testing.T) {
		// Open the directory and socket up on purpose: the peer check alone
		// must turn the agent away.
		for _, p := range []string{r.Dir, r.RunDir("other-run")} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(sock, 0o777); err != nil {
			t.Fatal(err)
		}
		res := probe(t, "PROBE_SOCK="+sock)
		if !strings.Contains(res["sock"], "no reply") {
			t.Errorf("sock: %q, want the connection closed without a reply", res["sock"])
		}
		logs, _ := os.ReadFile(filepath.Join(r.RunDir("other-run"), relayLog))
		if !strings.Contains(string(logs), "connection refused") || !strings.Contains(string(logs), "peer uid "+strconv.Itoa(int(iso.UID))) {
			t.Errorf("the relay did not log the refusal:\n%s", logs)
		}
		// The owner still controls it.
		if _, err := p.relay.request(relayRequest{Op: "status"}); err != nil {
			t.Errorf("the owner's status request: %v", err)
		}
	})
}

// TestNotDumpable: a process of the same (unprivileged) uid reads another's
// environ, unless that one made itself non-dumpable.
func TestNotDumpable(t *testing.T) {
	needAgentUser(t)
	exe := sharedExe(t)
	nobody, err := NewIsolation("nobody")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodump string
		denied bool
	}{{"0", false}, {"1", true}} {
		t.Run("nodump="+tc.nodump, func(t *testing.T) {
			target, err := Start(context.Background(), nil, Spec{Bin: exe, Env: []string{childEnv + "=nodump", "NODUMP=" + tc.nodump, "PLANTED=planted-value"}, Stdin: true, Isolation: nobody})
			if err != nil {
				t.Fatal(err)
			}
			var pid string
			_ = target.Each(func(line []byte) error {
				var v map[string]int
				_ = json.Unmarshal(line, &v)
				pid = strconv.Itoa(v["pid"])
				res := runProbe(t, Spec{Bin: exe, Env: []string{childEnv + "=probe", "PROBE_PID=" + pid}, Isolation: nobody})
				if tc.denied && !strings.Contains(res["environ"], "permission denied") {
					t.Errorf("environ of a non-dumpable process: %q", res["environ"])
				}
				if !tc.denied && !strings.Contains(res["environ_text"], "planted-value") {
					t.Errorf("control: a dumpable process's environ was not readable by its own uid: %q", res["environ"])
				}
				return target.CloseStdin()
			})
			if err := target.Wait(); err != nil {
				t.Fatal(err)
			}
			if pid == "" {
				t.Fatal("no pid from the target")
			}
		})
	}
}

// runProbe runs a "probe" child to its end and returns its report.
func runProbe(t *testing.T, spec Spec) map[string]string {
	t.Helper()
	p, err := Start(context.Background(), nil, spec)
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]string
	_ = p.Each(func(line []byte) error { return json.Unmarshal(line, &res) })
	if err := p.Wait(); err != nil || res == nil {
		t.Fatalf("probe: %v, report %v (stderr %q)", err, res, p.Stderr())
	}
	return res
}

// benchStart starts /bin/true under iso (nil: plain) and waits for its end.
func benchStart(b *testing.B, iso *Isolation) {
	for b.Loop() {
		p, err := Start(context.Background(), nil, Spec{Bin: "/bin/true", Dir: "/", Isolation: iso})
		if err != nil {
			b.Fatal(err)
		}
		_ = p.Each(func([]byte) error { return nil })
		if err := p.Wait(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStartPlain is the baseline: a start as the bot's own user.
func BenchmarkStartPlain(b *testing.B) { benchStart(b, nil) }

// BenchmarkStartIsolated starts as the agent user the way a root bot does
// (the credential applied directly).
func BenchmarkStartIsolated(b *testing.B) { benchStart(b, needAgentUser(b)) }

// BenchmarkStartIsolatedSetpriv starts through setpriv, the way a bot with
// only CAP_SETUID/CAP_SETGID does.
func BenchmarkStartIsolatedSetpriv(b *testing.B) {
	iso := *needAgentUser(b)
	p, err := exec.LookPath("setpriv")
	if err != nil {
		b.Fatal(err)
	}
	iso.Setpriv = p
	benchStart(b, &iso)
}

// TestIsolatedRelayedStart: under a relay, the agent runs as the agent user
// while the relay keeps the bot's uid.
func TestIsolatedRelayedStart(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	for name, sp := range map[string]string{"credential": "", "setpriv": "setpriv"} {
		t.Run(name, func(t *testing.T) {
			iso := *iso
			if sp != "" {
				p, err := exec.LookPath(sp)
				if err != nil {
					t.Fatal(err)
				}
				iso.Setpriv = p
			}
			r := testRelay(t)
			rr := r.Run("iso-" + name)
			p, err := Start(WithRelay(context.Background(), rr), nil, Spec{Bin: exe, Env: []string{childEnv + "=ident"}, Stdin: true, Isolation: &iso})
			if err != nil {
				t.Fatal(err)
			}
			var st, relaySt map[string]string
			err = p.Each(func([]byte) error {
				if st == nil {
					st = procStatus(t, p.Pid())
					var meta relayMetaFile
					b, _ := os.ReadFile(filepath.Join(r.RunDir(rr.runID), relayMeta))
					_ = json.Unmarshal(b, &meta)
					relaySt = procStatus(t, meta.RelayPid)
					return p.CloseStdin()
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Wait(); err != nil {
				t.Fatalf("wait: %v", err)
			}
			checkIdentity(t, st, &iso)
			if uid := strings.Fields(relaySt["Uid"]); len(uid) == 0 || uid[0] != strconv.Itoa(os.Getuid()) {
				t.Errorf("the relay runs as %q, want the bot's uid %d", relaySt["Uid"], os.Getuid())
			}
		})
	}
}

// TestIsolatedStartExplainsPermission: a working directory the agent user
// cannot enter fails the start with a hint naming the user, relayed or not.
func TestIsolatedStartExplainsPermission(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	private := t.TempDir() // root's, 0700
	spec := Spec{Bin: exe, Env: []string{childEnv + "=ident"}, Dir: private, Isolation: iso}
	for name, ctx := range map[string]context.Context{
		"direct":  context.Background(),
		"relayed": WithRelay(context.Background(), testRelay(t).Run("denied")),
	} {
		_, err := Start(ctx, nil, spec)
		if err == nil || !strings.Contains(err.Error(), "agents run as user "+agentUserName) || !strings.Contains(err.Error(), private) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
