// Output to a terminal that also shows an input line: streamed text that has
// not ended its line is redrawn above the prompt, and a status line (the
// spinner) stands there until the answer's first token.

package console

import (
	"io"
	"strings"
	"sync"

	"github.com/chzyer/readline"
)

// ttyWriter writes to a terminal whose last row may belong to a line editor
// (readline's writer clears and redraws the prompt around every write). The
// unfinished line of streamed text, or else the status, is written followed
// by a newline so that the prompt keeps a row of its own; the next write moves
// back up over it and draws it again with what came since.
type ttyWriter struct {
	mu  sync.Mutex
	out io.Writer
	// width reports the terminal's columns (0 or less: unknown, one row per line).
	width func() int
	// partial is the streamed text since the last newline; status is shown
	// in its place while it is empty.
	partial, status string
	// rows is how many rows the drawn tail (partial or status) takes.
	rows int
	// broken: the line editor ended the streamed line (newLine); the newline
	// that the next text starts with, if any, is already on the screen.
	broken bool
}

func newTTYWriter(out io.Writer, width func() int) *ttyWriter {
	return &ttyWriter{out: out, width: width}
}

// Write implements io.Writer.
func (w *ttyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(p)
	if w.broken {
		w.broken = false
		if w.partial == "" && len(p) > 0 && p[0] == '\n' {
			p = p[1:]
		}
	}
	s := w.partial + string(p)
	done, rest := s, ""
	if i := strings.LastIndexByte(s, '\n'); i < len(s)-1 {
		done, rest = s[:i+1], s[i+1:]
	}
	w.partial = rest
	if err := w.draw(done); err != nil {
		return 0, err
	}
	return n, nil
}

// newLine leaves the drawn tail where it is: the line editor is about to
// move to a new row below it, so the rest of the streamed line starts a row
// of its own.
func (w *ttyWriter) newLine() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.partial == "" && w.status != "" && w.rows > 0 {
		// erase the status; it is drawn again under the new row
		_, _ = io.WriteString(w.out, "\x1b[A\r\x1b[J")
	}
	w.broken = w.broken || w.partial != ""
	w.partial, w.rows = "", 0
}

// SetStatus shows s on the last row while no streamed text is unfinished
// (empty removes it).
func (w *ttyWriter) SetStatus(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s == w.status {
		return
	}
	w.status = s
	_ = w.draw("")
}

// draw erases the tail drawn before, writes done (whole lines) and draws the
// tail again, in one write.
func (w *ttyWriter) draw(done string) error {
	var b strings.Builder
	if w.rows > 0 {
		for range w.rows {
			b.WriteString("\x1b[A")
		}
		b.WriteString("\r\x1b[J")
	}
	b.WriteString(done)
	tail := w.partial
	if tail == "" {
		tail = w.status
	}
	w.rows = 0
	if tail != "" {
		b.WriteString(tail)
		b.WriteString("\n")
		w.rows = rowsOf(tail, w.width())
	}
	if b.Len() == 0 {
		return nil
	}
	_, err := io.WriteString(w.out, b.String())
	return err
}

// rowsOf is how many terminal rows s takes, ended by a newline, in a
// terminal width columns wide.
func rowsOf(s string, width int) int {
	n := readline.Runes{}.WidthAll([]rune(s))
	if width <= 0 || n <= width {
		return 1
	}
	return (n + width - 1) / width
}
