// Package procruntest holds what tests of isolated agent runs share: the
// real agent user they run agents as.
package procruntest

import (
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"testing"
)

// AgentUser is the user isolated agents run as in tests (the default host.user).
const AgentUser = "threadline-agent"

// NeedAgentUser returns AgentUser, creating it when missing (as the systemd
// unit and scripts/test.sh do). It needs root; without root the test is
// skipped, or failed under THREADLINE_E2E=1, where isolation must be proven.
func NeedAgentUser(t testing.TB) *user.User {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("THREADLINE_E2E") == "1" {
			t.Fatalf("isolation tests need root (to create and switch to %s)", AgentUser)
		}
		t.Skipf("isolation tests need root (to create and switch to %s)", AgentUser)
	}
	u, err := user.Lookup(AgentUser)
	if err == nil {
		return u
	}
	out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/"+AgentUser, AgentUser).CombinedOutput()
	if err != nil {
		t.Fatalf("useradd %s: %v: %s", AgentUser, err, out)
	}
	if u, err = user.Lookup(AgentUser); err != nil {
		t.Fatal(err)
	}
	return u
}

// SharedExecutable copies this test binary into a new directory every user
// may pass through (0711), as name (mode 0755), and returns the copy's
// path: the agent user cannot run go test's own, under a build directory
// of root's. The directory goes when the test ends.
func SharedExecutable(t testing.TB, name string) string {
	t.Helper()
	dir, path, err := ShareExecutable(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return path
}

// ShareExecutable is SharedExecutable outside a test (a TestMain): it
// returns the directory to remove as well.
func ShareExecutable(name string) (dir, path string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", "", err
	}
	if dir, err = os.MkdirTemp("", "tlexe"); err != nil {
		return "", "", err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return dir, "", err
	}
	src, err := os.Open(exe)
	if err != nil {
		return dir, "", err
	}
	defer src.Close()
	path = filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		return dir, "", err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return dir, "", err
	}
	return dir, path, f.Close()
}

// TraversableDir returns a new temporary directory every user may pass
// through but only root may change (mode 0711; t.TempDir's parent is
// private), removed with t: where the agent user reaches a socket or a
// file the test puts there.
func TraversableDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}
