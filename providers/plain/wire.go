// The plain wire: raw stdout chunks in, one text delta per output line out,
// the outcome from the exit status and the output tail.

package plain

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// wire is one plain run on a procrun.Session (its goroutine only). The
// prompt goes on the command line, in a file, or on stdin (then closed).
//
// Deltas are cut at line ends, one per output line with its newline (a line
// longer than procrun.ChunkBytes in ChunkBytes pieces, the last partial line
// at exit), so that the deltas depend on the output alone, never on how reads
// split it: a run reattached after a restart re-reads the relay's journal
// and re-emits exactly the deltas already recorded.
type wire struct {
	procrun.OneWay // Stdin: the prompt when it goes on stdin
	p              *Provider
	line           []byte // the output line being collected
	ch             chunker
	tail           *tailBuffer // stdout tail, for failure messages
	output         int         // bytes of text emitted

	brain  string // Antigravity's session directory, "" when not discovered
	before map[string]bool
}

var _ procrun.Wire = (*wire)(nil)

// Line takes one raw stdout chunk.
func (w *wire) Line(chunk []byte, c *procrun.Conn) error {
	_, _ = w.tail.Write(chunk)
	for len(chunk) > 0 {
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			room := procrun.ChunkBytes - len(w.line)
			if len(chunk) < room {
				w.line = append(w.line, chunk...)
				return nil
			}
			w.line = append(w.line, chunk[:room]...)
			chunk = chunk[room:]
			w.emitLine(c)
			continue
		}
		w.line = append(w.line, chunk[:i+1]...)
		chunk = chunk[i+1:]
		w.emitLine(c)
	}
	return nil
}

func (w *wire) emitLine(c *procrun.Conn) {
	w.delta(c, w.ch.feed(w.line))
	w.line = w.line[:0]
}

func (w *wire) delta(c *procrun.Conn, s string) {
	if s == "" {
		return
	}
	w.output += len(s)
	c.Emit(agent.Event{Type: agent.EventAssistantDelta, Text: s})
}

// Outcome maps the exit (see the package doc): the output left is flushed,
// then a sign-in failure, a non-zero exit or an empty answer fails the run,
// and a clean exit completes it after the session discovery. A cancelled or
// stopped run is left to the Session (run.interrupted "cancelled").
func (w *wire) Outcome(o procrun.Outcome, c *procrun.Conn) error {
	if len(w.line) > 0 {
		w.emitLine(c)
	}
	w.delta(c, w.ch.flush())
	// Tools the CLI started may still hold its process group: end them.
	c.Kill()
	if o.Cancelled || o.Fatal != nil || o.Terminal != "" || errors.Is(o.ExitErr, procrun.ErrDetached) {
		return nil
	}
	info := w.p.info
	tail := w.outputTail(o.Stderr)
	if info.signIn != nil && info.signIn.MatchString(tail) && (o.ExitErr != nil || w.output == 0) {
		c.Emit(agent.Event{Type: agent.EventSystem, Subtype: SubtypeSignIn, Text: info.signInHelp})
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: info.signInHelp})
		return fmt.Errorf("%w: %s: sign-in required", agent.ErrRunFailed, w.p.opts.ID)
	}
	if o.ExitErr != nil {
		code, cause := -1, o.ExitErr
		var pe *procrun.ProcessError
		if errors.As(o.ExitErr, &pe) {
			code, cause = pe.ExitCode, pe.Err
		}
		msg := fmt.Sprintf("%s exited with status %d", info.name, code)
		if t := procrun.StderrTail(tail, 1024); t != "" {
			msg += ": " + t
		}
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: msg})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, &procrun.ProcessError{ExitCode: code, Stderr: tail, Err: cause})
	}
	if w.output == 0 {
		msg := fmt.Sprintf("%s exited without printing an answer", info.name)
		if t := procrun.StderrTail(tail, 1024); t != "" {
			msg += ": " + t
		}
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: msg})
		return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
	}
	if w.brain != "" {
		if id, n := newSession(w.before, snapshot(w.brain)); id != "" {
			c.Emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: id})
		} else {
			c.Logger().Info("no single new antigravity session directory; session not saved", "new_dirs", n, "dir", w.brain)
		}
	}
	c.Emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// outputTail is the last TailBytes of the stdout tail followed by the
// stderr tail (display text: escapes and carriage returns dropped), so a
// failure message ends with what the CLI said last on stderr.
func (w *wire) outputTail(stderr string) string {
	out := w.tail.String()
	if stderr = strings.TrimSpace(stderr); stderr != "" {
		tb := &tailBuffer{max: TailBytes}
		_, _ = tb.Write([]byte(out))
		if out != "" && !strings.HasSuffix(out, "\n") {
			_, _ = tb.Write([]byte("\n"))
		}
		_, _ = tb.Write([]byte(stderr))
		out = tb.String()
	}
	return out
}
