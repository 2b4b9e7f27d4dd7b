// Tests of the netns the e2e tests run their CLIs in, and of the check that
// a run left no process behind.

package providertest

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestNetnsNoRouteOut proves the sandbox every e2e test runs its CLI in:
// inside the namespace only lo is up and no route leads out.
func TestNetnsNoRouteOut(t *testing.T) {
	if !InNetns(t) {
		return
	}
	if err := CheckNoRouteOut(); err != nil {
		t.Fatal(err)
	}
}

// TestMarked: the left-behind check of a Harness finds a process by the
// marker in its environment, sees it while it runs (watchMarked), and no
// longer once it is gone.
func TestMarked(t *testing.T) {
	env := map[string]string{}
	marker := MarkEnv(env)
	if env[MarkerEnv] != marker || len(marker) != 16 {
		t.Fatalf("MarkEnv: %q in %v", marker, env)
	}
	cmd := exec.Command("sleep", "60")
	cmd.Env = append(os.Environ(), MarkerEnv+"="+marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	close(stop)
	if got := Marked(marker); len(got) != 1 || !strings.HasPrefix(got[0], strconv.Itoa(cmd.Process.Pid)+" sleep 60") {
		t.Errorf("Marked = %q, want the sleep", got)
	}
	if !watchMarked(marker, stop) {
		t.Error("watchMarked did not see the live process")
	}
	if left := MarkedLeft(MarkEnv(map[string]string{})); len(left) != 0 {
		t.Errorf("another marker finds %q", left)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if left := MarkedLeft(marker); len(left) != 0 {
		t.Errorf("MarkedLeft after the kill = %q", left)
	}
}
