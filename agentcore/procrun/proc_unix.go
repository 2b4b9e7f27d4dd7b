//go:build unix

// Process-group handling on Unix.

package procrun

import (
	"os"
	"os/exec"
	"syscall"
)

// setProcAttr puts the child in its own process group so that Kill reaches the
// tools it spawned as well.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killTree kills the child's process group, falling back to the child alone.
func killTree(cmd *exec.Cmd) error {
	pid := cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGKILL); err == nil {
		return nil
	}
	return cmd.Process.Kill()
}

// interruptSignal asks a child to stop gracefully.
var interruptSignal = syscall.SIGINT

// setRelayAttr starts a relay in its own session, so that neither a signal to
// the bot's process group nor the end of its terminal reaches it.
func setRelayAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// setCredential starts cmd as c's user (nil: unchanged), keeping the
// process group set by setProcAttr or setRelayAttr.
func setCredential(cmd *exec.Cmd, c *credential) {
	if c == nil {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	// Groups nil clears the supplementary groups (setgroups with none).
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: c.UID, Gid: c.GID, Groups: c.Groups}
}

// ownerOf is fi's owner and group.
func ownerOf(fi os.FileInfo) (uid, gid uint32, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return st.Uid, st.Gid, true
}
