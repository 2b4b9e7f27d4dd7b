//go:build !unix

// Process handling elsewhere: the child alone.

package plain

import (
	"os"
	"os/exec"
)

func setGroup(*exec.Cmd) {}

func interruptGroup(cmd *exec.Cmd) error { return cmd.Process.Signal(os.Interrupt) }

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
