// Launch resolution and the command-line budget.

package registry

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func fakeLookPath(found map[string]string) func(string) (string, error) {
	return func(name string) (string, error) {
		if p, ok := found[name]; ok {
			return p, nil
		}
		return "", exec.ErrNotFound
	}
}

func TestResolveOrder(t *testing.T) {
	d := Definition{ID: "x", Name: "X", Executable: "x", Fallbacks: []string{"x-cli", "x2"}, InstallHint: "npm i -g x"}
	l, err := Resolve(d, fakeLookPath(map[string]string{"x-cli": "/b/x-cli", "x2": "/b/x2"}))
	if err != nil || l.Path != "/b/x-cli" || l.Name != "x-cli" || !slices.Equal(l.Tried, []string{"x", "x-cli", "x2"}) {
		t.Fatalf("Resolve = %+v, %v", l, err)
	}
	l, err = Resolve(d, fakeLookPath(map[string]string{"x": "/b/x", "x-cli": "/b/x-cli"}))
	if err != nil || l.Path != "/b/x" {
		t.Fatalf("executable first: %+v, %v", l, err)
	}
	// An operator's bin is the only candidate: no silent fallback.
	d.Bin = "/opt/x"
	_, err = Resolve(d, fakeLookPath(map[string]string{"x": "/b/x"}))
	if !errors.Is(err, agent.ErrNotInstalled) {
		t.Fatalf("bin override fell back: %v", err)
	}
	if !strings.Contains(err.Error(), `looked for "/opt/x"`) || !strings.Contains(err.Error(), "Install it with: npm i -g x") {
		t.Errorf("message %q", err)
	}
}

func TestArgvBudget(t *testing.T) {
	b := ArgvBudget(nil, []string{"/bin/true"})
	if b <= 0 || b > MaxArgStrlen-1 {
		t.Fatalf("budget %d", b)
	}
	env := []string{"A=" + strings.Repeat("x", 1000)}
	if got := ArgvBudget(env, []string{"/bin/true"}); got > b {
		t.Errorf("environment did not shrink the budget: %d > %d", got, b)
	}
	huge := []string{"A=" + strings.Repeat("x", ArgMax())}
	if got := ArgvBudget(huge, nil); got != 0 {
		t.Errorf("over-full environment gives budget %d, want 0", got)
	}
}

// TestArgvBudgetIsReal starts a real process with a prompt of exactly the
// budget (it must start) and, on Linux, one past the per-argument limit (it
// must fail with E2BIG): the budget is what the kernel accepts.
func TestArgvBudgetIsReal(t *testing.T) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		t.Skip("no true(1)")
	}
	env := []string{"PATH=" + os.Getenv("PATH")}
	budget := ArgvBudget(env, []string{truePath})
	cmd := exec.Command(truePath, strings.Repeat("a", budget))
	cmd.Env = env
	if err := cmd.Run(); err != nil {
		t.Fatalf("a prompt of the budget (%d bytes) did not start: %v", budget, err)
	}
	if runtime.GOOS != "linux" {
		return
	}
	cmd = exec.Command(truePath, strings.Repeat("a", MaxArgStrlen))
	cmd.Env = env
	if err := cmd.Run(); !errors.Is(err, syscall.E2BIG) {
		t.Fatalf("a %d-byte argument started (err %v): MaxArgStrlen is wrong", MaxArgStrlen, err)
	}
}
