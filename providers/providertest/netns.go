// Package providertest holds what the end-to-end tests of the providers share:
// running a test inside a loopback-only network namespace (InNetns), finding the
// pinned agent CLIs (FindCLI), the THREADLINE_E2E switch that turns "cannot run
// here" skips into failures, and the sandbox every real-CLI run starts in, as
// the agent user (sandbox.go; THREADLINE_TEST_SANDBOX=off runs it as before).
package providertest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Environment switches of the e2e harness.
const (
	// EnvInNetns is set to "1" in the test process re-executed inside the
	// loopback-only network namespace.
	EnvInNetns = "THREADLINE_IN_NETNS"
	// EnvE2E=1 turns every "cannot run the e2e here" skip into a failure (CI).
	EnvE2E = "THREADLINE_E2E"
)

// SkipOrFail skips t with the message, or fails it when THREADLINE_E2E=1.
func SkipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv(EnvE2E) == "1" {
		t.Fatalf("%s (%s=1: e2e is required)", msg, EnvE2E)
	}
	t.Skipf("%s (set %s=1 to make this a failure)", msg, EnvE2E)
}

// FindCLI locates an agent CLI: $envVar (e.g. THREADLINE_CLAUDE_BIN), else
// <repo>/node_modules/.bin/<name> (scripts/install-agents.sh), else PATH.
// Without it the test is skipped (failed under THREADLINE_E2E=1).
func FindCLI(t testing.TB, name, envVar string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			SkipOrFail(t, "%s=%s: %v", envVar, p, err)
		}
		return p
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, "node_modules", ".bin", name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	SkipOrFail(t, "%s CLI not found: run scripts/install-agents.sh, or set %s", name, envVar)
	return ""
}

// RepoRoot walks up from the working directory to the directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found")
		}
		dir = parent
	}
}

// InNetns makes the calling test run inside a network namespace where only
// loopback is up. Call it first in the test:
//
//	if !providertest.InNetns(t) { return }
//
// Inside the namespace (THREADLINE_IN_NETNS=1) it verifies that lo is the only
// interface and returns true. Outside, it re-executes the test binary for just
// this test under `unshare -n` (or `unshare -r -n` when not root) with lo up,
// relays the child's output to t's log, skips t if the child skipped, fails t
// if it failed, and returns false: the caller must return. Without unshare/ip
// or namespace rights the test is skipped (failed under THREADLINE_E2E=1).
func InNetns(t *testing.T) bool {
	t.Helper()
	if os.Getenv(EnvInNetns) == "1" {
		if err := OnlyLoopback(); err != nil {
			t.Fatalf("%s=1 but not in a loopback-only netns: %v", EnvInNetns, err)
		}
		return true
	}
	prefix, err := unshareCmd()
	if err != nil {
		SkipOrFail(t, "cannot create a loopback-only network namespace: %v", err)
		return false
	}
	pattern := runPattern(t.Name())
	args := append([]string{}, prefix[1:]...)
	args = append(args, os.Args[0], "-test.run="+pattern, "-test.v=true", "-test.count=1")
	if testing.Short() {
		args = append(args, "-test.short")
	}
	if dl, ok := t.Deadline(); ok {
		args = append(args, "-test.timeout="+time.Until(dl).Round(time.Second).String())
	}
	cmd := exec.Command(prefix[0], args...)
	cmd.Env = append(os.Environ(), EnvInNetns+"=1")
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start netns child: %v", err)
	}
	var (
		skipped, passed bool
		skipMsg         []string
		wg              sync.WaitGroup
	)
	name := regexp.QuoteMeta(t.Name())
	skipRe := regexp.MustCompile(`^\s*--- SKIP: ` + name + ` \(`)
	passRe := regexp.MustCompile(`^\s*--- PASS: ` + name + ` \(`)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var last []string
		for sc.Scan() {
			line := sc.Text()
			t.Log("[netns] " + line)
			switch {
			case skipRe.MatchString(line):
				skipped, skipMsg = true, append([]string(nil), last...)
			case passRe.MatchString(line):
				passed = true
			}
			last = append(last, line)
			if len(last) > 3 {
				last = last[1:]
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	werr := cmd.Wait()
	_ = pw.Close()
	wg.Wait()
	switch {
	case werr != nil:
		t.Fatalf("test failed inside the netns (%v, %s)", werr, time.Since(start).Round(time.Millisecond))
	case skipped:
		t.Skipf("skipped inside the netns: %s", strings.Join(skipMsg, " | "))
	case !passed:
		t.Fatalf("netns child did not run %s (pattern %s)", t.Name(), pattern)
	}
	return false
}

// runPattern anchors every element of a (sub)test name for -test.run.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

var (
	unshareOnce   sync.Once
	unsharePrefix []string
	unshareErr    error
)

// unshareCmd returns the command prefix that runs `$0 "$@"` in a fresh network
// namespace with lo up, after probing that it works here.
func unshareCmd() ([]string, error) {
	unshareOnce.Do(func() {
		us, err := exec.LookPath("unshare")
		if err != nil {
			unshareErr = fmt.Errorf("unshare(1) not found: %w", err)
			return
		}
		if _, err := exec.LookPath("ip"); err != nil {
			unshareErr = fmt.Errorf("ip(8) not found: %w", err)
			return
		}
		flags := []string{"-n"}
		if os.Geteuid() != 0 {
			flags = []string{"-r", "-n"}
		}
		prefix := append([]string{us}, flags...)
		prefix = append(prefix, "--", "/bin/sh", "-c", `ip link set lo up && exec "$0" "$@"`)
		probe := exec.Command(prefix[0], append(prefix[1:], "/bin/true")...)
		if out, err := probe.CombinedOutput(); err != nil {
			unshareErr = fmt.Errorf("%s: %v: %s", strings.Join(prefix, " "), err, strings.TrimSpace(string(out)))
			return
		}
		unsharePrefix = prefix
	})
	return unsharePrefix, unshareErr
}

// OnlyLoopback checks that the process sees exactly one network interface, a
// loopback that is up.
func OnlyLoopback() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	var names []string
	for _, i := range ifs {
		names = append(names, i.Name)
	}
	if len(ifs) != 1 || ifs[0].Flags&net.FlagLoopback == 0 {
		return fmt.Errorf("interfaces %v, want only lo", names)
	}
	if ifs[0].Flags&net.FlagUp == 0 {
		return errors.New("lo is down")
	}
	return nil
}

// CheckNoRouteOut proves the namespace has no way out without sending anything:
// OnlyLoopback passes and the kernel's IPv4 and IPv6 routing tables hold no route
// through another device.
func CheckNoRouteOut() error {
	if err := OnlyLoopback(); err != nil {
		return err
	}
	b, err := os.ReadFile("/proc/net/route")
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines[1:] { // header first
		if f := strings.Fields(l); len(f) > 0 && f[0] != "lo" {
			return fmt.Errorf("IPv4 route via %s", f[0])
		}
	}
	if b, err := os.ReadFile("/proc/net/ipv6_route"); err == nil {
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if f := strings.Fields(l); len(f) == 10 && f[9] != "lo" {
				return fmt.Errorf("IPv6 route via %s", f[9])
			}
		}
	}
	return nil
}
