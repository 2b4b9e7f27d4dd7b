//go:build !linux

// ARG_MAX elsewhere: conservative constants.

package registry

import "runtime"

// ArgMax returns the total size argv plus envp may have: 1 MiB on macOS
// (kern.argmax), 32 KiB on Windows (CreateProcess command line), SafeArgMax
// elsewhere.
func ArgMax() int {
	switch runtime.GOOS {
	case "darwin", "ios":
		return 1 << 20
	case "windows":
		return 32 << 10
	}
	return SafeArgMax
}
