//go:build !unix

// Process handling where process groups are not available.

package workspace

import "os/exec"

func setProcGroup(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) error { return cmd.Process.Kill() }
