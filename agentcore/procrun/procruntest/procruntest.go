// Package procruntest holds what tests of isolated agent runs share: the
// real agent user they run agents as.
package procruntest

import (
	"os"
	"os/exec"
	"os/user"
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
