//go:build linux

package console_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
)

// openPTY returns a pseudo-terminal's master and its terminal (80x24). What
// the terminal shows is read from the master into the returned buffer.
func openPTY(t *testing.T) (master, tty *os.File, screen *lockedBuffer) {
	t.Helper()
	// Non-blocking descriptors are pollable: closing one ends a read that waits on it.
	open := func(path string) (*os.File, error) {
		fd, err := unix.Open(path, unix.O_RDWR|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), path), nil
	}
	m, err := open("/dev/ptmx")
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	if tty, err = open(fmt.Sprintf("/dev/pts/%d", n)); err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	screen = &lockedBuffer{}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(screen, m)
	}()
	t.Cleanup(func() {
		tty.Close()
		m.Close()
		<-copied
	})
	return m, tty, screen
}

// type writes keys to the terminal as a user would.
func typeKeys(t *testing.T, m *os.File, keys string) {
	t.Helper()
	if _, err := m.WriteString(keys); err != nil {
		t.Fatal(err)
	}
}

const (
	keyLeft  = "\x1b[D"
	keyUp    = "\x1b[A"
	keyEnter = "\r"
	keyCtrlC = "\x03"
	keyCtrlD = "\x04"
)

// TestConsoleTerminal drives the chat on a pseudo-terminal: the line is
// edited with the arrow keys, a message typed during a turn is queued
// ("queued") and runs when the turn ends, Up recalls the history, which is
// kept mode 0600 in the history file; a spinner stands between Enter and
// the first token; Ctrl-D quits.
func TestConsoleTerminal(t *testing.T) {
	s, chat := stack(t)
	first := make(chan struct{})
	release := make(chan struct{})
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		select { // nothing until the test saw the spinner
		case <-first:
		case <-ctx.Done():
			return nil
		}
		return chatopstest.Gated(release, "partial answer")(ctx, req, emit)
	}, chatopstest.Answer("second done"), chatopstest.Answer("again done"))
	m, tty, screen := openPTY(t)
	hist := filepath.Join(t.TempDir(), "state", "chat_history")
	con := &console.Console{Bot: s.Bot, In: tty, Out: tty, By: "console:t", History: hist}
	wait := runConsole(t, con, chat)
	seen := 0
	waitOut(t, screen, &seen, "> ")
	typeKeys(t, m, "helo"+keyLeft+"l"+keyEnter) // helo, ←, l: hello
	waitOut(t, screen, &seen, "thinking…")
	close(first)
	waitOut(t, screen, &seen, "partial answer")
	typeKeys(t, m, "second"+keyEnter)
	waitOut(t, screen, &seen, "queued (1): second")
	close(release)
	waitOut(t, screen, &seen, "second done")
	waitOut(t, screen, &seen, "— done")
	typeKeys(t, m, keyUp+keyUp+keyEnter) // the line before the last: hello
	waitOut(t, screen, &seen, "again done")
	waitOut(t, screen, &seen, "— done")
	typeKeys(t, m, keyCtrlD)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := prompts(s.Prov); !slices.Equal(got, []string{"hello", "second", "hello"}) {
		t.Errorf("prompts %q", got)
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "hello\nsecond\nhello\n" {
		t.Errorf("history %q", b)
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v (%v)", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(hist)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("history directory mode %v (%v)", fi.Mode(), err)
	}
	// The terminal is back in its normal (cooked, echoing) mode.
	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON == 0 || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("terminal left raw: lflag %#x", tio.Lflag)
	}
}

// TestConsoleTerminalCtrlC: at the line editor Ctrl-C stops the running turn
// and drops the queue; idle, it asks for a second press, which quits.
func TestConsoleTerminalCtrlC(t *testing.T) {
	s, chat := stack(t)
	release := make(chan struct{})
	defer close(release)
	s.Prov.Add(chatopstest.Gated(release, "working"))
	m, tty, screen := openPTY(t)
	con := &console.Console{Bot: s.Bot, In: tty, Out: tty, By: "console:t", History: "-"}
	wait := runConsole(t, con, chat)
	seen := 0
	waitOut(t, screen, &seen, "> ")
	typeKeys(t, m, "go"+keyEnter)
	waitOut(t, screen, &seen, "working")
	typeKeys(t, m, "later"+keyEnter)
	waitOut(t, screen, &seen, "queued (1): later")
	typeKeys(t, m, keyCtrlC)
	waitOut(t, screen, &seen, "Dropped 1 queued message(s).")
	waitOut(t, screen, &seen, "[stopped]")
	typeKeys(t, m, keyCtrlC)
	waitOut(t, screen, &seen, "press Ctrl-C again")
	typeKeys(t, m, keyCtrlC)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if got := prompts(s.Prov); !slices.Equal(got, []string{"go"}) {
		t.Errorf("prompts %q", got)
	}
}

// TestConsoleTerminalStreamsAboveThePrompt: text that has not ended its line
// is drawn above the prompt and completed in place (the screen, read as a
// terminal would show it, holds the whole line once).
func TestConsoleTerminalStreamsAboveThePrompt(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Slow([]string{"Hel", "lo ", "wor", "ld"}, 10*time.Millisecond))
	m, tty, screen := openPTY(t)
	con := &console.Console{Bot: s.Bot, In: tty, Out: tty, By: "console:t", History: "-"}
	wait := runConsole(t, con, chat)
	seen := 0
	waitOut(t, screen, &seen, "> ")
	typeKeys(t, m, "hi"+keyEnter)
	waitOut(t, screen, &seen, "— done")
	typeKeys(t, m, keyCtrlD)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	rows := render(screen.String(), 80)
	if !slices.Contains(rows, "Hello world") {
		t.Errorf("no row reads %q:\n%s", "Hello world", strings.Join(rows, "\n"))
	}
	if i := slices.Index(rows, "Hello world"); i >= 0 && i+1 < len(rows) && !strings.HasPrefix(rows[i+1], "— done") {
		t.Errorf("after the text: %q", rows[i+1])
	}
}

// render plays the output through a minimal terminal (printable text, CR,
// LF, cursor up, clear line/to end of screen, cursor moves by CSI … D/C and
// erasing with \b) and returns its rows, trailing spaces trimmed.
func render(out string, width int) []string {
	var rows [][]rune
	r, c := 0, 0
	row := func() *[]rune {
		for len(rows) <= r {
			rows = append(rows, nil)
		}
		return &rows[r]
	}
	rs := []rune(out)
	for i := 0; i < len(rs); i++ {
		ch := rs[i]
		switch {
		case ch == '\r':
			c = 0
		case ch == '\n':
			r, c = r+1, 0
		case ch == '\b':
			c = max(0, c-1)
		case ch == 0x1b && i+1 < len(rs) && rs[i+1] == '[':
			j := i + 2
			for j < len(rs) && (rs[j] >= '0' && rs[j] <= '9' || rs[j] == ';' || rs[j] == '?') {
				j++
			}
			if j >= len(rs) {
				i = j
				continue
			}
			n := 1
			if _, err := fmt.Sscanf(string(rs[i+2:j]), "%d", &n); err != nil || n == 0 {
				n = 1
			}
			switch rs[j] {
			case 'A':
				r = max(0, r-n)
			case 'B':
				r += n
			case 'C':
				c += n
			case 'D':
				c = max(0, c-n)
			case 'K':
				p := row()
				if string(rs[i+2:j]) == "2" {
					*p = nil
				} else if c < len(*p) {
					*p = (*p)[:c]
				}
			case 'J':
				p := row()
				if c < len(*p) {
					*p = (*p)[:c]
				}
				rows = rows[:r+1]
			}
			i = j
		case ch < 0x20:
		default:
			if c >= width {
				r, c = r+1, 0
			}
			p := row()
			for len(*p) <= c {
				*p = append(*p, ' ')
			}
			(*p)[c] = ch
			c++
		}
	}
	out2 := make([]string, len(rows))
	for i, l := range rows {
		out2[i] = strings.TrimRight(string(l), " ")
	}
	return out2
}
