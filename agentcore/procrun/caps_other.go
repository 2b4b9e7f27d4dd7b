//go:build !linux

// Capabilities where Linux's are not available: nothing to drop.

package procrun

import (
	"errors"
	"os/exec"
)

// DropInheritedCaps does nothing outside Linux.
func DropInheritedCaps() error { return nil }

func effectiveCaps() (uint64, error) {
	return 0, errors.New("capabilities are a Linux feature")
}

func setAmbientCaps(*exec.Cmd, []uintptr) {}

// CheckNotPrivilegedExec has nothing to check outside Linux.
func CheckNotPrivilegedExec() error { return nil }
