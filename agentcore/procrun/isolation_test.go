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
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
)

// agentUserName is the user the isolation tests run agents as.
const agentUserName = procruntest.AgentUser

// needAgentUser returns the agent user's isolation, creating the user when
// missing (see procruntest.NeedAgentUser).
func needAgentUser(t testing.TB) *Isolation {
	t.Helper()
	procruntest.NeedAgentUser(t)
	iso, err := NewIsolation(agentUserName)
	if err != nil {
		t.Fatal(err)
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
		if os.Getenv("PROBE_SETUID") == "1" { // capabilities, and try to become root
			b, _ := os.ReadFile("/proc/self/status")
			res["status"] = string(b)
			try("setuid", syscall.Setuid(0))
		}
		_ = out.Encode(res)
	case "nbot": // a bot that is not root but holds the unit's ambient capabilities
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
		return fmt.Errorf("no reply: %w", err) // closed before the request
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return fmt.Errorf("no reply: %w", err)
	}
	return errors.New("the relay answered: " + strings.TrimSpace(line))
}

// nonRootBot is a bot that is not root and holds the unit's capabilities
// as ambient ones (CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL). It drops
// its inherited ones as the bot does at start and reports, as JSON: every
// thread's status; an isolated agent's status (direct and relayed) and its
// relay's; a plain child's report (capabilities, setuid(0)); whether Kill
// and Signal, direct and relayed, stopped the agent.
func nonRootBot(out *json.Encoder) int {
	rep := map[string]any{}
	defer func() { _ = out.Encode(rep) }()
	if err := DropInheritedCaps(); err != nil {
		rep["drop"] = err.Error()
		return 0
	}
	var threads []string
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, t := range tasks {
		b, _ := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "status"))
		threads = append(threads, string(b))
	}
	rep["threads"] = threads
	iso, err := NewIsolation(os.Getenv("AGENT_USER"))
	if err != nil {
		rep["err"] = err.Error()
		return 0
	}
	exe, _ := os.Executable()
	relay := Relay{Dir: os.Getenv("RELAY_DIR"), Command: []string{exe, "relay"}, Env: []string{childEnv + "=relay"}}
	ident := Spec{Bin: exe, Env: []string{childEnv + "=ident"}, Stdin: true, Isolation: iso}

	// An isolated agent, direct and relayed: its status while it runs.
	for _, name := range []string{"direct", "relayed"} {
		ctx := context.Background()
		if name == "relayed" {
			ctx = WithRelay(ctx, relay.Run("ident"))
		}
		p, err := Start(ctx, nil, ident)
		if err != nil {
			rep[name+"_err"] = err.Error()
			continue
		}
		_ = p.Each(func(line []byte) error {
			if _, ok := rep[name]; !ok {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
				rep[name] = string(st)
				if p.relay != nil {
					var meta relayMetaFile
					b, _ := os.ReadFile(filepath.Join(relay.RunDir("ident"), relayMeta))
					_ = json.Unmarshal(b, &meta)
					st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", meta.RelayPid))
					rep["relay"] = string(st)
				}
				_ = p.CloseStdin()
			}
			return nil
		})
		rep[name+"_wait"] = fmt.Sprint(p.Wait())
	}

	// A plain child (not isolated), as lxc, git or a version probe are.
	p, err := Start(context.Background(), nil, Spec{Bin: exe, Env: []string{childEnv + "=probe", "PROBE_SETUID=1"}})
	if err != nil {
		rep["plain_err"] = err.Error()
	} else {
		var plain map[string]string
		_ = p.Each(func(line []byte) error { return json.Unmarshal(line, &plain) })
		rep["plain"], rep["plain_wait"] = plain, fmt.Sprint(p.Wait())
	}

	// Stopping agents of another uid: Kill and Signal, direct and relayed.
	stops := map[string]string{}
	for _, how := range []string{"kill", "signal"} {
		for _, name := range []string{"direct", "relayed"} {
			stops[how+"/"+name] = stopAgent(relay, ident, how, name)
		}
	}
	rep["stops"] = stops
	return 0
}

// stopAgent starts an isolated agent that runs until its stdin ends, stops
// it with Kill or Signal(SIGTERM) and reports "stopped" once its process is
// gone, else what went wrong.
func stopAgent(relay Relay, spec Spec, how, name string) string {
	ctx := context.Background()
	if name == "relayed" {
		ctx = WithRelay(ctx, relay.Run("stop-"+how))
	}
	p, err := Start(ctx, nil, spec)
	if err != nil {
		return "start: " + err.Error()
	}
	pid := p.Pid()
	up := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		_ = p.Each(func([]byte) error {
			select {
			case up <- struct{}{}:
			default:
			}
			return nil
		})
		done <- p.Wait()
	}()
	select {
	case <-up:
	case <-time.After(30 * time.Second):
		return fmt.Sprintf("pid %d: no output", pid)
	}
	var serr error
	if how == "kill" {
		serr = p.Kill()
	} else {
		serr = p.Signal(syscall.SIGTERM)
	}
	if serr != nil { // the agent lives on: the test's parent (root) ends it
		return fmt.Sprintf("%s: %v (pid %d)", how, serr, pid)
	}
	var werr error
	select {
	case werr = <-done:
	case <-time.After(30 * time.Second):
		return fmt.Sprintf("pid %d: still running 30 s after %s", pid, how)
	}
	var pe *ProcessError
	if !errors.As(werr, &pe) || pe.ExitCode != -1 {
		return fmt.Sprintf("wait: %v, want death by a signal", werr)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return "stopped"
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("pid %d still exists", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	t.Run("credential", func(t *testing.T) {
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

// unitCaps are the capabilities configs/threadline.service gives the bot
// (AmbientCapabilities), in setpriv's spelling and as a CapEff mask.
const (
	unitCaps    = "+setuid,+setgid,+chown,+kill"
	unitCapMask = 1<<capSetuid | 1<<capSetgid | 1<<capChown | 1<<capKill
	relayMask   = 1<<capSetuid | 1<<capSetgid | 1<<capKill
)

// asNonRootBot returns a command that runs argv as nobody holding the
// unit's capabilities as ambient ones, as systemd starts the bot.
func asNonRootBot(argv ...string) *exec.Cmd {
	return exec.Command("setpriv", append([]string{"--reuid=nobody", "--regid=nogroup", "--clear-groups",
		"--inh-caps=" + unitCaps, "--ambient-caps=" + unitCaps, "--"}, argv...)...)
}

// capsOf parses a capability line of a status map.
func capsOf(t *testing.T, st map[string]string, key string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(st[key], 16, 64)
	if err != nil {
		t.Fatalf("%s %q: %v", key, st[key], err)
	}
	return v
}

// TestIsolationFromNonRootBot runs the test binary as nobody with the unit's
// ambient capabilities, as systemd runs the bot. After DropInheritedCaps no
// thread of the bot keeps an ambient or inheritable capability while it
// still holds them effective; its isolated agent (direct or relayed) has no
// capability; its relay holds CAP_SETUID, CAP_SETGID and CAP_KILL and none
// ambient; a plain child has none and cannot setuid(0); Kill and Signal,
// direct and relayed, stop an agent of the other uid.
func TestIsolationFromNonRootBot(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	// Control: the harness hands the capabilities on to a child that does
	// not drop them (any program the bot started before this fix).
	b, err := asNonRootBot("/bin/cat", "/proc/self/status").Output()
	if err != nil {
		t.Fatalf("setpriv: %v", err)
	}
	if ctl := parseStatus(string(b)); capsOf(t, ctl, "CapAmb") != unitCapMask || capsOf(t, ctl, "CapEff") != unitCapMask {
		t.Fatalf("the harness does not give ambient capabilities: CapAmb %s CapEff %s", ctl["CapAmb"], ctl["CapEff"])
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	relayDir, err := os.MkdirTemp("", "tlnr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(relayDir) })
	uid, _ := strconv.Atoi(nobody.Uid)
	if err := os.Chown(relayDir, uid, -1); err != nil {
		t.Fatal(err)
	}
	cmd := asNonRootBot(exe)
	cmd.Env = []string{childEnv + "=nbot", "AGENT_USER=" + agentUserName, "RELAY_DIR=" + relayDir, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/"
	b, err = cmd.Output()
	if err != nil {
		t.Fatalf("non-root bot: %v: %s", err, b)
	}
	var rep struct {
		Drop, Err              string
		Threads                []string
		Direct, Relayed, Relay string
		DirectWait             string `json:"direct_wait"`
		RelayedWait            string `json:"relayed_wait"`
		Plain                  map[string]string
		PlainWait              string `json:"plain_wait"`
		Stops                  map[string]string
		DirectErr              string `json:"direct_err"`
		RelayedErr             string `json:"relayed_err"`
		PlainErr               string `json:"plain_err"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %q: %v", b, err)
	}
	t.Logf("report: %s", b)
	for _, e := range []string{rep.Drop, rep.Err, rep.DirectErr, rep.RelayedErr, rep.PlainErr} {
		if e != "" {
			t.Fatal(e)
		}
	}
	if len(rep.Threads) < 2 {
		t.Errorf("%d threads reported, want all of them", len(rep.Threads))
	}
	for i, th := range rep.Threads {
		st := parseStatus(th)
		if strings.Fields(st["Uid"])[0] == "0" {
			t.Fatalf("the bot runs as root: Uid %q", st["Uid"])
		}
		if capsOf(t, st, "CapAmb") != 0 || capsOf(t, st, "CapInh") != 0 || capsOf(t, st, "CapEff") != unitCapMask || capsOf(t, st, "CapPrm") != unitCapMask {
			t.Errorf("bot thread %d: CapAmb %s CapInh %s CapEff %s CapPrm %s, want 0 0 %x %x", i, st["CapAmb"], st["CapInh"], st["CapEff"], st["CapPrm"], unitCapMask, unitCapMask)
		}
	}
	checkIdentity(t, parseStatus(rep.Direct), iso)
	checkIdentity(t, parseStatus(rep.Relayed), iso)
	if rep.DirectWait != "<nil>" || rep.RelayedWait != "<nil>" {
		t.Errorf("isolated agents: wait %s (direct), %s (relayed)", rep.DirectWait, rep.RelayedWait)
	}
	relaySt := parseStatus(rep.Relay)
	if strings.Fields(relaySt["Uid"])[0] != nobody.Uid || capsOf(t, relaySt, "CapEff") != relayMask || capsOf(t, relaySt, "CapAmb") != 0 || capsOf(t, relaySt, "CapInh") != 0 {
		t.Errorf("relay: Uid %q CapEff %s CapAmb %s CapInh %s, want nobody with %x and nothing ambient or inheritable", relaySt["Uid"], relaySt["CapEff"], relaySt["CapAmb"], relaySt["CapInh"], relayMask)
	}
	plain := parseStatus(rep.Plain["status"])
	for _, k := range []string{"CapInh", "CapPrm", "CapEff", "CapAmb"} {
		if capsOf(t, plain, k) != 0 {
			t.Errorf("plain child: %s = %s, want no capability", k, plain[k])
		}
	}
	if !strings.Contains(rep.Plain["setuid"], "operation not permitted") || rep.PlainWait != "<nil>" {
		t.Errorf("plain child: setuid(0) = %q (wait %s), want operation not permitted", rep.Plain["setuid"], rep.PlainWait)
	}
	for _, k := range []string{"kill/direct", "kill/relayed", "signal/direct", "signal/relayed"} {
		if rep.Stops[k] != "stopped" {
			t.Errorf("%s: %q", k, rep.Stops[k])
			killLeftover(rep.Stops[k])
		}
	}
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

// BenchmarkStartIsolated starts as the agent user (the credential applied
// directly, as root and non-root bots do).
func BenchmarkStartIsolated(b *testing.B) { benchStart(b, needAgentUser(b)) }

// TestIsolatedRelayedStart: under a relay, the agent runs as the agent user
// while the relay keeps the bot's uid.
func TestIsolatedRelayedStart(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t)
	for _, name := range []string{"credential"} {
		t.Run(name, func(t *testing.T) {
			iso := *iso
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

// TestIsolatedStartRefusesWritableExecutable: an isolated start refuses an
// executable the agent user could change (owner, group- or world-writable,
// a writable directory above it, through a symbolic link) and starts one
// it cannot; the check is Isolation.CheckExecutable.
func TestIsolatedStartRefusesWritableExecutable(t *testing.T) {
	iso := needAgentUser(t)
	exe := sharedExe(t) // root's, 0755, in a 0711 directory of root
	base := filepath.Dir(exe)
	uid, gid := int(iso.UID), int(iso.GID)
	mk := func(t *testing.T, dir string, mode os.FileMode, owner, group int) string {
		t.Helper()
		b, err := os.ReadFile(exe)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("agent-%d", time.Now().UnixNano()))
		if err := os.WriteFile(p, b, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, owner, group); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	agentDir := filepath.Join(base, "agent-owned")
	if err := os.Mkdir(agentDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(agentDir, uid, gid); err != nil {
		t.Fatal(err)
	}
	ownedByAgent := mk(t, base, 0o755, uid, gid)
	link := filepath.Join(base, "link-to-agent-owned")
	if err := os.Symlink(ownedByAgent, link); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"owned by the agent user": ownedByAgent,
		"world-writable":          mk(t, base, 0o757, 0, 0),
		"writable by its group":   mk(t, base, 0o775, 0, gid),
		"in its directory":        mk(t, agentDir, 0o755, 0, 0),
		"through a link":          link,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Start(context.Background(), nil, Spec{Bin: path, Env: []string{childEnv + "=probe"}, Isolation: iso})
			if !errors.Is(err, ErrWritableExecutable) || !strings.Contains(err.Error(), agentUserName) {
				t.Fatalf("Start = %v, want ErrWritableExecutable naming %s", err, agentUserName)
			}
			// Relayed as well.
			_, err = Start(WithRelay(context.Background(), testRelay(t).Run("w")), nil, Spec{Bin: path, Env: []string{childEnv + "=probe"}, Isolation: iso})
			if !errors.Is(err, ErrWritableExecutable) {
				t.Fatalf("relayed Start = %v, want ErrWritableExecutable", err)
			}
		})
	}
	t.Run("root's, in a sticky directory", func(t *testing.T) {
		sticky, err := os.MkdirTemp("", "tlsticky")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(sticky) })
		if err := os.Chmod(sticky, os.ModePerm|os.ModeSticky); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{exe, mk(t, sticky, 0o755, 0, 0), mk(t, base, 0o775, 0, 0)} {
			if err := iso.CheckExecutable(p); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
		runProbe(t, Spec{Bin: exe, Env: []string{childEnv + "=probe"}, Isolation: iso})
	})
}

// killLeftover ends the agent a failed stop report names ("... (pid N)").
func killLeftover(report string) {
	if _, rest, ok := strings.Cut(report, "(pid "); ok {
		if pid, err := strconv.Atoi(strings.TrimSuffix(rest, ")")); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
