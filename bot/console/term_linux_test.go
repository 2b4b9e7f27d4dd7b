package console_test

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/bot/console"
)

// TestIsTerminal: a pseudo-terminal is one; a string reader and /dev/null
// (a character device) are not.
func TestIsTerminal(t *testing.T) {
	if console.IsTerminal(strings.NewReader("")) {
		t.Error("a string reader is a terminal")
	}
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if console.IsTerminal(null) {
		t.Error("/dev/null is a terminal")
	}
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer m.Close()
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	if !console.IsTerminal(tty) {
		t.Error("a pseudo-terminal is not a terminal")
	}
}
