package fakeapi

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
	"syscall"
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
	// EnvClaudeBin overrides the Claude Code executable.
	EnvClaudeBin = "THREADLINE_CLAUDE_BIN"
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

// FindClaude locates the Claude Code CLI: $THREADLINE_CLAUDE_BIN, else
// <repo>/node_modules/.bin/claude (scripts/install-agents.sh), else PATH.
// Without it the test is skipped (failed under THREADLINE_E2E=1).
func FindClaude(t testing.TB) string {
	t.Helper()
	if p := os.Getenv(EnvClaudeBin); p != "" {
		if _, err := os.Stat(p); err != nil {
			SkipOrFail(t, "%s=%s: %v", EnvClaudeBin, p, err)
		}
		return p
	}
	if root, err := repoRoot(); err == nil {
		p := filepath.Join(root, "node_modules", ".bin", "claude")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("claude"); err == nil {
		return p
	}
	SkipOrFail(t, "Claude Code CLI not found: run scripts/install-agents.sh, or set %s", EnvClaudeBin)
	return ""
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
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

// ClaudeEnv is the environment for a Claude Code child talking to this server:
// HOME, CLAUDE_CONFIG_DIR and XDG dirs under dir, the fake's base URL, a dummy
// key, and telemetry, error reporting, auto-updates and nonessential traffic off.
func (s *Server) ClaudeEnv(dir string) map[string]string {
	home := filepath.Join(dir, "home")
	cfg := filepath.Join(dir, "claude-config")
	for _, d := range []string{home, cfg} {
		_ = os.MkdirAll(d, 0o700)
	}
	return map[string]string{
		"HOME":               home,
		"CLAUDE_CONFIG_DIR":  cfg,
		"XDG_CONFIG_HOME":    filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":     filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":      filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":     filepath.Join(home, ".local", "state"),
		"ANTHROPIC_BASE_URL": s.URL(),
		"ANTHROPIC_API_KEY":  "dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
		"DISABLE_AUTOUPDATER":                      "1",
		"DISABLE_TELEMETRY":                        "1",
		"DISABLE_ERROR_REPORTING":                  "1",
		"DISABLE_NON_ESSENTIAL_MODEL_CALLS":        "1",
		"NO_PROXY":                                 "127.0.0.1,localhost",
		"no_proxy":                                 "127.0.0.1,localhost",
	}
}

// InNetns makes the calling test run inside a network namespace where only
// loopback is up. Call it first in the test:
//
//	if !fakeapi.InNetns(t) { return }
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

// CheckNoRouteOut proves the namespace has no way out: after OnlyLoopback
// passes, a TCP connect to a public address must fail locally with
// ENETUNREACH (nothing is sent: there is no route). It never dials when a
// non-loopback interface exists.
func CheckNoRouteOut() error {
	if err := OnlyLoopback(); err != nil {
		return err
	}
	start := time.Now()
	c, err := net.DialTimeout("tcp", "1.1.1.1:80", 2*time.Second)
	if err == nil {
		_ = c.Close()
		return errors.New("connected to 1.1.1.1:80: the namespace has a route out")
	}
	if !errors.Is(err, syscall.ENETUNREACH) {
		return fmt.Errorf("dial 1.1.1.1:80 failed with %v, want ENETUNREACH", err)
	}
	if d := time.Since(start); d > time.Second {
		return fmt.Errorf("dial took %s, want an immediate local failure", d)
	}
	return nil
}
