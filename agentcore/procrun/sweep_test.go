package procrun

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestSweep: a process that left its group (setsid) but carries the token
// is killed; one without it is not.
func TestSweep(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Sweep reads /proc")
	}
	token := RunToken()
	if !strings.HasPrefix(token, RunTokenEnv+"=") || token == RunToken() {
		t.Fatalf("token %q", token)
	}
	start := func(env ...string) *exec.Cmd {
		cmd := exec.Command("sleep", "300")
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
	marked, other := start(token), start(RunToken())
	if n := Sweep(token); n != 1 {
		t.Errorf("Sweep killed %d, want 1", n)
	}
	if err := marked.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("marked sleep: %v, want killed", err)
	}
	if err := other.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the other run's sleep is gone: %v", err)
	}
}
