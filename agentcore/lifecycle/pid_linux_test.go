package lifecycle

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// TestZombieIsDead: a child that has exited but is not reaped yet (a zombie:
// kill(pid, 0) still succeeds) is not alive, with or without a heartbeat
// time; reaped, it is gone too.
func TestZombieIsDead(t *testing.T) {
	cmd := exec.Command("sleep", "0")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = cmd.Wait()
		}
	})
	waitState(t, pid, "Z")
	if processAlive(pid, time.Time{}) {
		t.Error("a zombie counts as alive (no heartbeat time)")
	}
	if processAlive(pid, time.Now()) {
		t.Error("a zombie counts as alive (heartbeat now)")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	reaped = true
	if processAlive(pid, time.Time{}) {
		t.Skipf("pid %d was reused at once", pid)
	}
}

// TestRunningChildIsAlive: a child still running (sleeping) is alive.
func TestRunningChildIsAlive(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitState(t, cmd.Process.Pid, "S")
	if !processAlive(cmd.Process.Pid, time.Now()) {
		t.Error("a running child counts as dead")
	}
}

// waitState polls /proc/<pid>/stat until the process is in state (up to 10 s).
func waitState(t *testing.T, pid int, state string) {
	t.Helper()
	if _, err := os.Stat("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		fields, err := statFields(pid)
		if err != nil {
			t.Fatalf("stat of pid %d: %v", pid, err)
		}
		if last = string(fields[0]); last == state {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pid %d still in state %s after 10 s, want %s", pid, last, state)
}
