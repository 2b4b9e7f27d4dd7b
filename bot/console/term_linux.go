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

// termWidth is f's terminal width in columns, 0 when unknown.
func termWidth(f *os.File) int {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Col)
}
