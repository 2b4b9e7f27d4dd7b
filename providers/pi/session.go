// Wire: pi's RPC mode on procrun.Session.

package pi

import (
	"fmt"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// retryTimer is the wire timer of the retry window after a failed agent_end.
const retryTimer = "retry"

// wire is one pi turn: get_state and the prompt, the parser's dialog
// answers, the retry window and the native abort.
type wire struct {
	parser     *Parser
	req        agent.RunRequest
	prompt     []byte
	retryGrace time.Duration
	graceArmed bool
}

func (w *wire) Start(c *procrun.Conn) error {
	if readOnly(w.req) {
		c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "read_only_tools",
			Text: "pi cannot ask for approval: this run only has the tools " + strings.Join(ReadOnlyTools, ", ")})
	}
	c.Write([]byte(`{"type":"get_state","id":"` + stateID + `"}`))
	w.parser.StartTurn(promptID)
	c.Write(w.prompt)
	return nil
}

func (w *wire) Line(line []byte, c *procrun.Conn) error {
	evs, err := w.parser.Parse(line)
	c.FlushEmit(w.parser, evs)
	w.afterEvents(c)
	return err
}

// afterEvents arms or disarms the retry window and, after the terminal
// event, writes what the parser still queued before stdin closes.
func (w *wire) afterEvents(c *procrun.Conn) {
	switch pending := w.parser.PendingFailure(); {
	case pending && !w.graceArmed:
		w.graceArmed = true
		c.After(retryTimer, w.retryGrace)
	case !pending && w.graceArmed:
		w.graceArmed = false
		c.After(retryTimer, 0)
	}
	if c.Terminal() != "" {
		c.Flush(w.parser)
	}
}

func (w *wire) settle(c *procrun.Conn) {
	for _, ev := range w.parser.Settle() {
		c.Emit(ev)
	}
	w.afterEvents(c)
}

// Timer ends the retry window: the failure stands.
func (w *wire) Timer(_ string, c *procrun.Conn) {
	w.graceArmed = false
	w.settle(c)
}

func (w *wire) Respond(resp agent.InteractionResponse, c *procrun.Conn) error {
	return c.Answer(w.parser, resp)
}

// Interrupt aborts natively (abort, plus abort_retry while pi waits to
// retry); inside the retry window the failure is settled instead.
func (w *wire) Interrupt(c *procrun.Conn) error {
	w.parser.Interrupting = true
	if w.parser.PendingFailure() {
		w.settle(c)
		return nil
	}
	if w.parser.Retrying() {
		c.Write([]byte(`{"type":"abort_retry","id":"threadline-abort-retry"}`))
	}
	c.Write([]byte(`{"type":"abort","id":"threadline-abort"}`))
	return nil
}

// End settles a pending failure and answers open dialogs.
func (w *wire) End(c *procrun.Conn) {
	w.settle(c)
	if c.Terminal() == "" {
		for _, ev := range w.parser.EndPending() {
			c.Emit(ev)
		}
	}
}

func (w *wire) Outcome(o procrun.Outcome, c *procrun.Conn) error {
	if o.Fatal == nil && o.Terminal == "" && w.req.ResumeID != "" && sessionNotFound(o.Stderr) {
		c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "session_not_found", Text: procrun.StderrTail(o.Stderr, 512)})
		return fmt.Errorf("pi --session %s: %w", w.req.ResumeID, agent.ErrSessionNotFound)
	}
	return nil
}
