//go:build !linux

// Terminal detection elsewhere: none.

package console

import (
	"io"
	"os"
)

// IsTerminal reports false where terminals are not detected: approvals follow
// --interactions (default deny).
func IsTerminal(io.Reader) bool { return false }

// termWidth is unknown here.
func termWidth(*os.File) int { return 0 }
