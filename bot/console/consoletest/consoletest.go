//go:build linux

// Package consoletest drives a terminal front-end on a pseudo-terminal in
// tests: keys typed on the master side, the screen read from it and played
// through a minimal terminal.
package consoletest

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// Keys as a terminal sends them.
const (
	Left  = "\x1b[D"
	Up    = "\x1b[A"
	Enter = "\r"
	CtrlC = "\x03"
	CtrlD = "\x04"
)

// Screen is everything the terminal was sent, safe for a writer and a
// polling reader; Wait moves a cursor through it.
type Screen struct {
	mu   sync.Mutex
	b    strings.Builder
	seen int
}

func (s *Screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String is all that was written so far.
func (s *Screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Wait waits until want is written after what earlier Waits found, and
// moves past it (60 s, scaled by THREADLINE_TEST_TIMEOUT_SCALE).
func (s *Screen) Wait(t testing.TB, want string) {
	t.Helper()
	deadline := time.Now().Add(providertest.Scale(60 * time.Second))
	for {
		all := s.String()
		s.mu.Lock()
		seen := s.seen
		s.mu.Unlock()
		if i := strings.Index(all[seen:], want); i >= 0 {
			s.mu.Lock()
			s.seen = seen + i + len(want)
			s.mu.Unlock()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q after:\n%q", want, all[seen:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Rows is the screen as a terminal width columns wide shows it (Render).
func (s *Screen) Rows(width int) []string { return Render(s.String(), width) }

// PTY is a pseudo-terminal: Tty is the terminal a program uses as stdin and
// stdout, Master the side the test types on; the Screen reads from it.
type PTY struct {
	Master, Tty *os.File
	Screen      *Screen
}

// Type writes keys to the terminal as a user would.
func (p *PTY) Type(t testing.TB, keys ...string) {
	t.Helper()
	if _, err := p.Master.WriteString(strings.Join(keys, "")); err != nil {
		t.Fatal(err)
	}
}

// Open opens a pseudo-terminal of 80x24, closed at the end of the test; it
// skips the test where there are none.
func Open(t testing.TB) *PTY {
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
	tty, err := open(fmt.Sprintf("/dev/pts/%d", n))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 80}); err != nil {
		t.Fatal(err)
	}
	p := &PTY{Master: m, Tty: tty, Screen: &Screen{}}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(p.Screen, m)
	}()
	t.Cleanup(func() {
		tty.Close()
		m.Close()
		<-copied
	})
	return p
}

// Render plays the output through a minimal terminal (printable text, CR,
// LF, cursor up, clear line/to end of screen, cursor moves by CSI … D/C and
// erasing with \b) and returns its rows, trailing spaces trimmed.
func Render(out string, width int) []string {
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
