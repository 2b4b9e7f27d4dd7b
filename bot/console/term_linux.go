// Terminal detection on Linux: a tty answers TCGETS.

package console

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether r is an interactive terminal (a tty, not merely
// a character device such as /dev/null).
func IsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
