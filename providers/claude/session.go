// Wire: Claude Code's stream-json control protocol on procrun.Session.

package claude

import (
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// wire is one turn of the stream-json protocol: the prompt line, the
// parser's control responses and the native interrupt.
type wire struct {
	parser     *Parser
	prompt     []byte
	interrupts int
}

func (w *wire) Start(c *procrun.Conn) error {
	c.Write(w.prompt)
	return nil
}

func (w *wire) Line(line []byte, c *procrun.Conn) error {
	evs, err := w.parser.Parse(line)
	for i, ev := range evs {
		if ev.Type == agent.EventRunFailed {
			evs[i].Text = signInHint(ev.Text) // "Not logged in" becomes how to sign in
		}
	}
	c.FlushEmit(w.parser, evs)
	if w.parser.SawResult() {
		c.Done() // the turn is over: let the CLI exit, but not forever
	}
	return err
}

func (w *wire) Respond(resp agent.InteractionResponse, c *procrun.Conn) error {
	return c.Answer(w.parser, resp)
}

func (w *wire) Interrupt(c *procrun.Conn) error {
	w.parser.Interrupting = true
	w.interrupts++
	c.Write(interruptLine(w.interrupts))
	return nil
}

// End answers what is still pending when the CLI exited without a result.
func (w *wire) End(c *procrun.Conn) {
	for _, ev := range w.parser.EndPending() {
		c.Emit(ev)
	}
}

func (w *wire) Outcome(o procrun.Outcome, _ *procrun.Conn) error {
	if o.Fatal == nil && w.parser.SessionNotFound() {
		return fmt.Errorf("claude resume: %w", agent.ErrSessionNotFound)
	}
	return nil
}
