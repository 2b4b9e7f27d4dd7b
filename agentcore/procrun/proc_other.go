//go:build !unix

// Process handling where process groups are not available.

package procrun

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func killTree(cmd *exec.Cmd) error { return cmd.Process.Kill() }

var interruptSignal = os.Interrupt

func setRelayAttr(*exec.Cmd) {}

func setCredential(*exec.Cmd, *credential) {}

func ownerOf(os.FileInfo) (uid, gid uint32, ok bool) { return 0, 0, false }
