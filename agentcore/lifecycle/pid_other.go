//go:build !linux

// Process probing elsewhere: kill(pid, 0) only (no start time to guard
// against a reused pid).

package lifecycle

import (
	"errors"
	"syscall"
	"time"
)

// processAlive reports whether pid exists.
func processAlive(pid int, _ time.Time) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
