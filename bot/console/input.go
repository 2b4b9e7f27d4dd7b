// Input: lines from a pipe (read one at a time, when the chat is ready for
// them), or from a terminal through a line editor (arrow keys, history,
// Ctrl-R), read all the time so that what is typed during a turn is queued.

package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chzyer/readline"

	"github.com/threadline-bot/threadline/configs"
)

// input is a typed line, or a Ctrl-C press at the line editor.
type input struct {
	text      string
	interrupt bool
}

// pipeLines delivers r's lines on the returned channel, closed at the end of
// r. The next line is read only once the previous one was taken.
func pipeLines(ctx context.Context, r io.Reader) <-chan input {
	out := make(chan input)
	go func() {
		defer close(out)
		br := bufio.NewReader(r)
		for {
			s, err := br.ReadString('\n')
			if s != "" || err == nil {
				select {
				case out <- input{text: strings.TrimRight(s, "\r\n")}:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return out
}

// editor is the line editor on a terminal.
type editor struct {
	rl    *readline.Instance
	stdin *readline.CancelableStdin

	mu     sync.Mutex
	raw    *readline.State // the terminal's state before raw mode
	closed bool

	masked atomic.Bool // the line is drawn as * (maskPainter)
	// inReadline is set while lines is in rl.Readline (see settle).
	inReadline atomic.Bool
	// handled is sent when the last input was handled (done).
	handled chan struct{}
}

// errEditorClosed keeps a closed editor from taking the terminal again.
var errEditorClosed = errors.New("console: line editor closed")

// newEditor starts a line editor reading the terminal in and drawing on out
// (the same terminal, as a rule). history, when not empty, is the file that
// keeps the lines typed, created mode 0600. newLine is called when a key
// that ends the input line (Enter, Ctrl-C, Ctrl-D) is read, before the
// editor moves to a new row.
func newEditor(in, out *os.File, history string, newLine func()) (*editor, error) {
	if history != "" {
		if err := privateFile(history); err != nil {
			return nil, err
		}
	}
	e := &editor{stdin: readline.NewCancelableStdin(in), handled: make(chan struct{}, 1)}
	fd := int(in.Fd())
	cfg := &readline.Config{
		Prompt:                 "> ",
		HistoryFile:            history,
		HistoryLimit:           1000,
		DisableAutoSaveHistory: true, // answers to questions are not history (secrets)
		HistorySearchFold:      true,
		InterruptPrompt:        "^C",
		EOFPrompt:              "\n",
		Stdin:                  newKeyReader(e.stdin), // Home and End as every terminal sends them (keys.go)
		Painter:                maskPainter{&e.masked},
		Stdout:                 out,
		Stderr:                 out,
		FuncIsTerminal:         func() bool { return true },
		FuncGetWidth:           func() int { return termWidth(out) },
		FuncFilterInputRune: func(r rune) (rune, bool) {
			switch r {
			case readline.CharEnter, readline.CharCtrlJ, readline.CharInterrupt, readline.CharDelete:
				newLine()
			}
			return r, true
		},
		FuncMakeRaw: func() error {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.closed {
				return errEditorClosed
			}
			if e.raw != nil {
				return nil
			}
			st, err := readline.MakeRaw(fd)
			if err == nil {
				e.raw = st
			}
			return err
		},
		FuncExitRaw: func() error {
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.raw == nil {
				return nil
			}
			st := e.raw
			e.raw = nil
			return readline.Restore(fd, st)
		},
	}
	rl, err := readline.NewEx(cfg)
	if err != nil {
		return nil, fmt.Errorf("console: line editor: %w", err)
	}
	e.rl = rl
	return e, nil
}

// lines reads lines until the end of input (Ctrl-D on an empty line) or ctx
// ends; Ctrl-C is an input with interrupt set. After each input it waits for
// handled before it draws the prompt again: what the line printed comes
// first (while the editor reads, a write lands after the prompt it just drew).
func (e *editor) lines(ctx context.Context) <-chan input {
	out := make(chan input)
	go func() {
		defer close(out)
		for first := true; ctx.Err() == nil; first = false {
			if !first {
				select {
				case <-e.handled:
				case <-ctx.Done():
					return
				}
			}
			e.inReadline.Store(true)
			line, err := e.rl.Readline()
			e.inReadline.Store(false)
			in := input{text: line}
			switch {
			case errors.Is(err, readline.ErrInterrupt):
				in = input{interrupt: true}
			case err != nil:
				return
			}
			select {
			case out <- in:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// done tells lines that the input it delivered was handled.
func (e *editor) done() {
	select {
	case e.handled <- struct{}{}:
	default:
	}
}

// remember adds a line to the history (and its file).
func (e *editor) remember(line string) {
	if strings.TrimSpace(line) == "" {
		return
	}
	_ = e.rl.SaveHistory(line)
}

// setPrompt changes the prompt and redraws the line being edited; mask
// shows what is typed as * (the answer to a secret question).
func (e *editor) setPrompt(p string, mask bool) {
	e.settle()
	e.masked.Store(mask)
	e.rl.SetPrompt(p)
	e.rl.Refresh()
}

// maskPainter draws the line being edited as is, or as * while masked (set
// at any time: readline's own mask is a Config field it reads unlocked).
type maskPainter struct{ masked *atomic.Bool }

// Paint implements readline.Painter.
func (m maskPainter) Paint(line []rune, _ int) []rune {
	if !m.masked.Load() {
		return line
	}
	out := make([]rune, len(line))
	for i := range out {
		out[i] = '*'
	}
	return out
}

// settleWait bounds settle: the window it waits out is readline's own few
// instructions between drawing the prompt and reading.
const settleWait = 200 * time.Millisecond

// settle waits while Readline has drawn its prompt but does not read yet:
// readline redraws the prompt under a write or after SetPrompt only while
// it reads (Terminal.IsReading), so a turn's last line written in that
// window was left after a stale prompt, and the new prompt was never drawn.
func (e *editor) settle() {
	for deadline := time.Now().Add(settleWait); e.inReadline.Load() && !e.rl.Terminal.IsReading() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// writer writes above the line being edited.
func (e *editor) writer() io.Writer { return settledWriter{e} }

// settledWriter writes through readline's Stdout once the editor settled.
type settledWriter struct{ e *editor }

// Write implements io.Writer.
func (w settledWriter) Write(b []byte) (int, error) {
	w.e.settle()
	return w.e.rl.Stdout().Write(b)
}

// close restores the terminal, for good.
func (e *editor) close() {
	// readline's Close closes the Stdin wrapper it made, not the reader given
	// to it: closing that ends the editor's read of the terminal.
	_ = e.stdin.Close()
	_ = e.rl.Close()
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	_ = e.rl.Config.FuncExitRaw()
}

// privateFile creates path (and its directory, 0700) mode 0600, or takes
// group and other permissions away from an existing one.
func privateFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("console: history: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("console: history: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("console: history: %w", err)
	}
	if fi.Mode().Perm() != 0o600 {
		if err := f.Chmod(0o600); err != nil {
			return fmt.Errorf("console: history: %w", err)
		}
	}
	return nil
}

// HistoryFile is where the terminal chat keeps the lines its user typed:
// chat_history in the state directory, $XDG_STATE_HOME/threadline
// (~/.local/state/threadline), one file per user.
func HistoryFile() (string, error) {
	dir, err := configs.StateDir()
	if err != nil {
		return "", fmt.Errorf("console: history: %w", err)
	}
	return filepath.Join(dir, "chat_history"), nil
}
