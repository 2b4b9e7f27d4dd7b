// The isolation of a bot that is not root, as configs/threadline.service runs
// it: the test binary re-executed (also as `threadline relay`) as nobody with the unit's ambient
// capabilities prepares chat directories, saves attachments and starts and
// stops agents as the agent user.

package execution

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
)

// nonRootBotEnv selects the non-root bot role of the test binary.
const nonRootBotEnv = "THREADLINE_TEST_NONROOT_BOT"

// unitCaps are the unit's AmbientCapabilities in setpriv's spelling.
const unitCaps = "+setuid,+setgid,+chown,+kill"

func init() {
	if len(os.Args) >= 3 && os.Args[1] == "relay" { // procrun starts `<exe> relay [--agent-user NAME] DIR`, as threadline relay does
		if err := procrun.RunRelay(context.Background(), os.Args[2:], os.Stdin, os.Stdout, slog.New(slog.NewTextHandler(os.Stderr, nil))); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv(nonRootBotEnv) == "1" {
		os.Exit(nonRootBotRole())
	}
}

// nonRootBotRole runs in the re-executed test binary and prints a JSON
// report: what isolated agents read in their chat directories, what
// planting symbolic links there achieved, and how stopping agents went.
func nonRootBotRole() int {
	rep := map[string]string{}
	defer func() { _ = json.NewEncoder(os.Stdout).Encode(rep) }()
	fail := func(k string, err error) int { rep[k] = "error: " + err.Error(); return 0 }
	if err := procrun.DropInheritedCaps(); err != nil { // as main does
		return fail("drop", err)
	}
	iso, err := procrun.NewIsolation(os.Getenv("AGENT_USER"))
	if err != nil {
		return fail("isolation", err)
	}
	root := os.Getenv("WORK_ROOT")
	files := WorkFiles{Iso: iso, Root: root}
	save := func(dir, name, body string) error {
		w, err := files.CreateWorkFile(dir, name)
		if err != nil {
			return err
		}
		_, err = io.WriteString(w, body)
		if cerr := w.Close(); err == nil {
			err = cerr
		}
		return err
	}
	// agent runs a shell command as the agent user in dir, as a run does
	// (the directory prepared first), and returns its output.
	agent := func(dir, script string) string {
		if err := PrepareWorkdir(root, dir, iso); err != nil {
			return "prepare: " + err.Error()
		}
		p, err := procrun.Start(procrun.WithIsolation(context.Background(), iso), nil, procrun.Spec{Bin: "/bin/sh", Args: []string{"-c", script}, Dir: dir})
		if err != nil {
			return "start: " + err.Error()
		}
		var out []string
		_ = p.Each(func(l []byte) error { out = append(out, string(l)); return nil })
		if err := p.Wait(); err != nil {
			return fmt.Sprintf("wait: %v (%s)", err, strings.Join(out, "|"))
		}
		return strings.Join(out, "|")
	}

	// A new chat: its directory created by the bot (as chatops does), an
	// attachment before the first run, one after it.
	chat := filepath.Join(root, "chat-1")
	if err := os.MkdirAll(chat, 0o750); err != nil {
		return fail("mkdir", err)
	}
	if err := save(chat, "before.txt", "saved before"); err != nil {
		return fail("save_before", err)
	}
	rep["first"] = agent(chat, `cat before.txt; ln -s ../bot.secret planted.txt; ln -s ../created-by-bot dangling.txt; echo; id -u`)
	if err := save(chat, "after.txt", "saved after"); err != nil {
		return fail("save_after", err)
	}
	rep["second"] = agent(chat, `cat after.txt before.txt`)
	for _, name := range []string{"planted.txt", "dangling.txt"} {
		err := save(chat, name, "overwritten by the bot")
		rep["plant_"+name] = fmt.Sprint(errors.Is(err, os.ErrExist))
	}
	if fi, err := os.Stat(chat); err == nil {
		st := fi.Sys().(*syscall.Stat_t)
		rep["chat_dir"] = fmt.Sprintf("%d:%d %v", st.Uid, st.Gid, fi.Mode())
	}
	// A chat directory of the earlier layout: the agent's, 0700, holding an
	// attachment the bot saved as itself (0640) before the agent's first run.
	rep["legacy"] = agent(filepath.Join(root, "chat-0"), `cat old.txt`)

	// Stopping an agent of the other uid, direct and relayed.
	exe, _ := os.Executable()
	relay := procrun.Relay{Dir: os.Getenv("RELAY_DIR"), Command: []string{exe, "relay"}}
	for _, how := range []string{"kill", "signal"} {
		for _, relayed := range []bool{false, true} {
			key := how + "/direct"
			ctx := procrun.WithIsolation(context.Background(), iso)
			if relayed {
				key = how + "/relayed"
				ctx = procrun.WithRelay(ctx, relay.Run("stop-"+how))
			}
			rep[key] = stopAgent(ctx, chat, how)
		}
	}
	return 0
}

// stopAgent starts an agent that runs until stopped in dir, stops it with
// Kill or Signal(SIGTERM) and reports "stopped" once its process is gone.
func stopAgent(ctx context.Context, dir, how string) string {
	p, err := procrun.Start(ctx, nil, procrun.Spec{Bin: "/bin/sh", Args: []string{"-c", "echo up; exec sleep 600"}, Dir: dir})
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
	if pe, ok := procrun.IsExit(werr); !ok || pe.ExitCode != -1 {
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

// TestNonRootBotIsolation: as a non-root bot holding the unit's capabilities
// (CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL), a chat's directory goes to
// the agent user (group the bot's, 2770); the agent reads attachments saved
// before and after its first run, and one saved by the earlier layout; a
// symbolic link it planted is not followed when the bot saves a file of that
// name; Kill and Signal, direct and relayed, stop the agent.
func TestNonRootBotIsolation(t *testing.T) {
	u := procruntest.NeedAgentUser(t)
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	bu, _ := strconv.Atoi(nobody.Uid)
	bg, _ := strconv.Atoi(nobody.Gid)
	au, _ := strconv.Atoi(u.Uid)
	ag, _ := strconv.Atoi(u.Gid)
	base, err := os.MkdirTemp("", "tlnrb")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	mk := func(p string, mode os.FileMode, uid, gid int) {
		t.Helper()
		if err := os.MkdirAll(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, gid); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	mk(base, 0o711, 0, 0)
	root, relays := filepath.Join(base, "work"), filepath.Join(base, "relays")
	mk(root, 0o700, bu, bg)
	mk(relays, 0o700, bu, bg)
	secret := filepath.Join(root, "bot.secret")
	if err := os.WriteFile(secret, []byte("bot-private"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(secret, bu, bg); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(root, "chat-0")
	mk(legacy, 0o700, au, ag)
	old := filepath.Join(legacy, "old.txt")
	if err := os.WriteFile(old, []byte("saved by the old layout"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(old, bu, bg); err != nil {
		t.Fatal(err)
	}
	exe := sharedTestExe(t)
	cmd := exec.Command("setpriv", "--reuid="+nobody.Uid, "--regid="+nobody.Gid, "--clear-groups",
		"--inh-caps="+unitCaps, "--ambient-caps="+unitCaps, "--", exe)
	cmd.Env = []string{nonRootBotEnv + "=1", "AGENT_USER=" + u.Username, "WORK_ROOT=" + root, "RELAY_DIR=" + relays, "PATH=" + os.Getenv("PATH")}
	cmd.Dir = "/"
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("non-root bot: %v: %s", err, b)
	}
	var rep map[string]string
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report %q: %v", b, err)
	}
	for _, k := range []string{"drop", "isolation", "mkdir", "save_before", "save_after"} {
		if rep[k] != "" {
			t.Fatalf("%s: %s", k, rep[k])
		}
	}
	if want := "saved before|" + u.Uid; rep["first"] != want {
		t.Errorf("first run printed %q, want %q", rep["first"], want)
	}
	if want := "saved aftersaved before"; rep["second"] != want {
		t.Errorf("second run printed %q, want %q", rep["second"], want)
	}
	if rep["legacy"] != "saved by the old layout" {
		t.Errorf("the agent of an earlier layout's chat read %q", rep["legacy"])
	}
	if want := fmt.Sprintf("%s:%s %v", u.Uid, nobody.Gid, os.ModeDir|os.ModeSetgid|0o770); rep["chat_dir"] != want {
		t.Errorf("chat dir %q, want %q", rep["chat_dir"], want)
	}
	for _, name := range []string{"planted.txt", "dangling.txt"} {
		if rep["plant_"+name] != "true" {
			t.Errorf("saving over the planted link %s: exists=%s, want refused as existing", name, rep["plant_"+name])
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "bot-private" {
		t.Errorf("the bot's file behind a planted link was changed: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(root, "created-by-bot")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dangling planted link was followed: %v", err)
	}
	for _, name := range []string{"before.txt", "after.txt"} {
		fi, err := os.Stat(filepath.Join(root, "chat-1", name))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != au || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: uid %d mode %v, want the agent's, 0600", name, st.Uid, fi.Mode())
		}
	}
	for _, k := range []string{"kill/direct", "kill/relayed", "signal/direct", "signal/relayed"} {
		if rep[k] != "stopped" {
			t.Errorf("%s: %q", k, rep[k])
			killLeftover(rep[k])
		}
	}
}

// sharedTestExe copies the test binary where nobody and the agent user may
// run it (go test's build directory is root's).
func sharedTestExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "tlexe")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "threadline.test")
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// killLeftover ends the agent a failed stop report names ("... (pid N)").
func killLeftover(report string) {
	if _, rest, ok := strings.Cut(report, "(pid "); ok {
		if pid, err := strconv.Atoi(strings.TrimSuffix(rest, ")")); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
