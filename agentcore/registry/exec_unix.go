//go:build unix

// Probe processes on Unix: own process group, killed as a group.

package registry

import (
	"os/exec"
	"syscall"
)

// groupKill puts cmd in its own process group and makes a cancellation kill
// the whole group, so a probe that forked (a node shim) leaves nothing behind.
func groupKill(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err == nil {
			return nil
		}
		return cmd.Process.Kill()
	}
}
