// The e2e tests as an ordinary user: the sandbox without the uid switch,
// as an ordinary user's `threadline chat` runs its agents.

package providertest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// OrdinaryUser is the user AsOrdinaryUser starts the tests as: not root,
// without any capability, not the agent user (cmd/threadline's
// TestOrdinaryUserRun runs threadline as it too).
const OrdinaryUser = "threadline-tester"

// AsOrdinaryUser runs the tests of this binary that pattern (-test.run)
// selects once more, as an ordinary user: in a child test process in a
// loopback-only network namespace, started as OrdinaryUser (root sets lo up,
// then drops to that user with no capability and no supplementary group, in
// the initial user namespace: not the mapped root of `unshare -r`, which
// could switch users there). A sandboxed test's runs then start as that user
// itself, in the sandbox, as an ordinary user's `threadline chat` starts
// them. t fails unless each selected test passed there and every run they
// made was sandboxed as that user (their "sandboxed run as" lines).
//
// As an ordinary user already, every e2e test ran so: t is skipped. Under a
// mapped root (no way to another user) t is skipped, failed under
// THREADLINE_E2E=1; with THREADLINE_TEST_SANDBOX=off it is skipped.
func AsOrdinaryUser(t *testing.T, pattern string) {
	t.Helper()
	switch {
	case SandboxOff():
		t.Skipf("%s=off: nothing is sandboxed", SandboxEnv)
	case os.Getenv(EnvInNetns) == "1":
		t.Fatal("AsOrdinaryUser runs in the outer test process, not in a netns child")
	case os.Geteuid() != 0:
		t.Skip("this test process is an ordinary user's: every e2e test ran sandboxed as it")
	case !realRoot():
		SkipOrFail(t, "root of a user namespace (unshare -r) cannot start the tests as another user")
	}
	prefix, err := unshareCmd()
	if err != nil {
		SkipOrFail(t, "cannot create a loopback-only network namespace: %v", err)
	}
	u := needOrdinaryUser(t)
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	helper := helperPath(t) // root's build directory is closed to the user
	home := t.TempDir()     // the user's HOME, its own
	if err := giveTo(home, uid, gid); err != nil {
		t.Fatal(err)
	}
	args := []string{"-n", "--", "/bin/sh", "-c",
		`ip link set lo up && g="$1" && shift && exec setpriv --reuid="$0" --regid="$g" --clear-groups --inh-caps=-all --bounding-set=-all -- "$@"`,
		u.Uid, u.Gid, helper, "-test.run=" + pattern, "-test.v=true", "-test.count=1"}
	if dl, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(dl).Round(time.Second).String())
	}
	cmd := exec.Command(prefix[0], args...)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "HOME", "USER", "LOGNAME", "TMPDIR", EnvInNetns, helperEnv:
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, EnvInNetns+"=1", helperEnv+"="+helper, "HOME="+home, "USER="+u.Username, "LOGNAME="+u.Username)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the tests as %s: %v", OrdinaryUser, err)
	}
	var (
		lines []string
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			t.Log("[" + OrdinaryUser + "] " + sc.Text())
			lines = append(lines, sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	werr := cmd.Wait()
	_ = pw.Close()
	wg.Wait()
	if werr != nil {
		t.Fatalf("the tests failed as %s (%v, %s)", OrdinaryUser, werr, time.Since(start).Round(time.Millisecond))
	}
	if err := checkOrdinary(lines, uid); err != nil {
		t.Fatalf("as %s: %v", OrdinaryUser, err)
	}
	t.Logf("the tests %s passed as %s, sandboxed, in %s", pattern, OrdinaryUser, time.Since(start).Round(time.Millisecond))
}

var (
	topResult = regexp.MustCompile(`^--- (PASS|FAIL|SKIP): (\S+) \(`)
	runAs     = regexp.MustCompile(`sandboxed run as (.*?): cwd `)
)

// checkOrdinary checks the verbose output of the tests run as the user of
// uid: at least one test, each passed (none skipped), and at least one run,
// each sandboxed as that user.
func checkOrdinary(lines []string, uid int) error {
	var passed, runs int
	want := processUser(uid)
	for _, l := range lines {
		if m := topResult.FindStringSubmatch(l); m != nil {
			if m[1] != "PASS" {
				return fmt.Errorf("%s %s", m[2], m[1])
			}
			passed++
		}
		if m := runAs.FindStringSubmatch(l); m != nil {
			if m[1] != want {
				return fmt.Errorf("a run sandboxed as %s, want %s: %s", m[1], want, l)
			}
			runs++
		}
	}
	if passed == 0 || runs == 0 {
		return fmt.Errorf("%d tests passed, %d sandboxed runs: want some of each", passed, runs)
	}
	return nil
}

// needOrdinaryUser returns OrdinaryUser, creating it when missing (a system
// user without a home: the tests give it one).
func needOrdinaryUser(t testing.TB) *user.User {
	t.Helper()
	u, err := user.Lookup(OrdinaryUser)
	if err == nil {
		return u
	}
	out, err := exec.Command("useradd", "--system", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", OrdinaryUser).CombinedOutput()
	if err != nil {
		// Another test process may have made it meanwhile.
		if u, lerr := user.Lookup(OrdinaryUser); lerr == nil {
			return u
		}
		t.Fatalf("useradd %s: %v: %s", OrdinaryUser, err, out)
	}
	if u, err = user.Lookup(OrdinaryUser); err != nil {
		t.Fatal(err)
	}
	return u
}
