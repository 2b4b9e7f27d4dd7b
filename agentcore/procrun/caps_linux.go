// Capabilities on Linux: the bot keeps its own, no child inherits any.

package procrun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/sandbox"
)

// DropInheritedCaps clears the ambient and inheritable capability sets of
// every thread of this process and keeps its permitted and effective sets.
// Without it, a bot given capabilities as ambient ones (systemd's
// AmbientCapabilities, the way a non-root bot gets CAP_SETUID) passes them to
// every program it starts: lxc, git, a version probe, an agent. Once they are
// cleared, a child that is not set-uid and has no file capabilities starts
// with none (permitted, effective, ambient and inheritable all empty),
// whatever user it runs as.
//
// Capabilities belong to threads. A binary built without cgo clears every
// thread's (syscall.AllThreadsSyscall); one built with cgo cleared them while
// it had a single thread, before the Go runtime started (caps_cgo_linux.go).
// Either way DropInheritedCaps then checks every thread and fails when one
// still holds an ambient or inheritable capability. The bot calls it first
// thing, each relay at its start.
func DropInheritedCaps() error {
	_, _, errno := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0)
	switch errno {
	case 0:
		if err := clearInheritable(); err != nil {
			return err
		}
	case syscall.ENOTSUP: // cgo: done at load (caps_cgo_linux.go)
	case syscall.EINVAL: // a kernel without ambient capabilities (< 4.3)
		if err := clearInheritable(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", errno)
	}
	return checkThreadCaps()
}

// clearInheritable empties the inheritable set of every thread (no cgo).
func clearInheritable() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if data[0].Inheritable == 0 && data[1].Inheritable == 0 {
		return nil
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if _, _, errno := syscall.AllThreadsSyscall(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); errno != 0 {
		return fmt.Errorf("capset: %w", errno)
	}
	return nil
}

// checkThreadCaps fails when a thread of this process still holds an
// ambient or inheritable capability.
func checkThreadCaps() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("list threads: %w", err)
	}
	for _, t := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", t.Name(), "status"))
		if errors.Is(err, os.ErrNotExist) {
			continue // the thread ended meanwhile
		}
		if err != nil {
			return fmt.Errorf("thread %s: %w", t.Name(), err)
		}
		for _, k := range []string{"CapAmb", "CapInh"} {
			v, err := statusCaps(string(b), k)
			if err != nil {
				return fmt.Errorf("thread %s: %w", t.Name(), err)
			}
			if v != 0 {
				return fmt.Errorf("thread %s keeps %s %016x: children would inherit capabilities", t.Name(), k, v)
			}
		}
	}
	return nil
}

// statusCaps reads one capability line (CapEff, CapAmb...) of a
// /proc/.../status text.
func statusCaps(status, key string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			return strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return 0, fmt.Errorf("no %s in status", key)
}

// effectiveCaps reads CapEff of this process.
func effectiveCaps() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return statusCaps(string(b), "CapEff")
}

// setAmbientCaps starts cmd with caps as ambient capabilities (a relay of
// an isolated run, see relayCaps).
func setAmbientCaps(cmd *exec.Cmd, caps []uintptr) {
	if len(caps) == 0 {
		return
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.AmbientCaps = caps
}

// ErrSecureExec is returned (wrapped) by CheckNotPrivilegedExec.
var ErrSecureExec = sandbox.ErrSecureExec

// CheckNotPrivilegedExec fails when this process was started in secure-exec
// mode (AT_SECURE in its auxiliary vector): from a set-uid or set-gid file,
// or one carrying file capabilities. Threadline never acts with privileges a
// file grants: an agent user that may execute the binary would gain them
// (`threadline relay` starts a program as a user it is told). Privileges
// come from being root, or from the ambient capabilities of the systemd
// unit, which no child inherits (DropInheritedCaps).
func CheckNotPrivilegedExec() error {
	if err := sandbox.CheckNotSecureExec(); err != nil {
		return fmt.Errorf("%w; remove them (setcap -r, chmod u-s,g-s), see README \"Isolation\"", err)
	}
	return nil
}
