//go:build unix

// Process-group handling on Unix.

package workspace

import (
	"os/exec"
	"syscall"
)

// setProcGroup puts git in its own process group, keeping whatever else the
// Cmd hook set (a credential), so that a kill reaches what git started: ssh,
// a remote helper, a hook, a filter.
func setProcGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
}

// killGroup kills git's process group, falling back to git alone.
func killGroup(cmd *exec.Cmd) error {
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err == nil {
		return nil
	}
	return cmd.Process.Kill()
}
