// The ACP wire on procrun.Session: initialize → session/new or session/load
// (with the replay-quiet window) → model and mode → session/prompt, the
// start deadline, native cancel, and the outcome of a missing session.

package acp

import (
	"encoding/base64"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Run phases.
const (
	phaseInit = iota
	phaseSession
	phaseSetup
	phasePrompt
	phaseDone
)

// Session timers.
const (
	timerStart = "start" // StartTimeout, until the prompt is sent
	timerQuiet = "quiet" // Definition.LoadQuiet of replay silence after session/load
	timerExit  = "exit"  // Definition.ExitTimeout after the turn ended, also a cancelled one
)

// setupCall is one request sent between session setup and the prompt.
type setupCall struct {
	what   string // "model" or "mode"
	method string
	params any
}

// wire is one ACP turn (the Session's goroutine only).
type wire struct {
	p      *Provider
	parser *Parser
	req    agent.RunRequest
	cwd    string

	phase        int
	setup        []setupCall
	inFlight     *setupCall
	quiet        bool // the replay-quiet window is open
	notResumable bool
}

var (
	_ procrun.Wire  = (*wire)(nil)
	_ procrun.Ender = (*wire)(nil)
	_ procrun.Timed = (*wire)(nil)
)

// Start sends initialize and arms the start deadline.
func (w *wire) Start(c *procrun.Conn) error {
	c.After(timerStart, w.p.opts.StartTimeout)
	c.Write(w.parser.Request("initialize", InitializeParams{
		ProtocolVersion:    ProtocolVersion,
		ClientCapabilities: ClientCapabilities{},
		ClientInfo:         ClientInfo,
	}))
	return nil
}

// Line parses one agent line, writes the parser's answers, emits its events
// and sequences the protocol on the replies.
func (w *wire) Line(line []byte, c *procrun.Conn) error {
	parsed, err := w.parser.Parse(line)
	c.FlushEmit(w.parser, parsed.Events)
	if parsed.Reply != nil {
		w.onReply(parsed.Reply, c)
	}
	if w.quiet && w.parser.Replaying() {
		c.After(timerQuiet, w.p.def.LoadQuiet)
	}
	if c.Terminal() != "" || w.parser.SessionNotFound() {
		w.done(c)
	}
	return err
}

// Timer handles the start deadline and the end of the replay-quiet window.
func (w *wire) Timer(name string, c *procrun.Conn) {
	switch name {
	case timerStart:
		if w.phase >= phasePrompt {
			return
		}
		c.Logger().Warn("agent did not get ready in time, killing", "timeout", w.p.opts.StartTimeout)
		c.Emit(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("%s did not start a session within %s", w.p.def.ID, w.p.opts.StartTimeout)})
		w.kill(c)
	case timerExit:
		c.Logger().Info("agent stays after its turn ended, killing", "exit_timeout", w.p.def.ExitTimeout)
		c.Kill()
	case timerQuiet:
		w.quiet = false
		for _, ev := range w.parser.EndReplay() {
			c.Emit(ev)
		}
		w.startSetup(c)
	}
}

func (w *wire) kill(c *procrun.Conn) {
	w.phase = phaseDone
	c.Kill()
}

// done ends the conversation: stdin closes (the agent exits) under the
// Session's exit deadline.
func (w *wire) done(c *procrun.Conn) {
	if w.phase == phaseDone {
		return
	}
	w.phase = phaseDone
	c.Done()
	// The Session's kill deadline is armed once: a cancelled turn keeps
	// InterruptTimeout. An agent known to stay after stdin's end has its
	// own, shorter one from the turn's end.
	if d := w.p.def.ExitTimeout; d > 0 {
		c.After(timerExit, d)
	}
}

// onReply sequences the protocol: initialize → session/new or session/load
// → model and mode → session/prompt.
func (w *wire) onReply(rep *Reply, c *procrun.Conn) {
	if c.Terminal() != "" || w.phase == phaseDone {
		return
	}
	switch rep.Method {
	case "initialize":
		if rep.Err != nil {
			return
		}
		w.phase = phaseSession
		if w.req.ResumeID == "" {
			c.Write(w.parser.Request("session/new", sessionParams{Cwd: w.cwd, McpServers: mcpServers(w.req.MCPServers)}))
			return
		}
		if !w.parser.LoadSession() {
			w.notResumable = true
			c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "session_not_found",
				Text: fmt.Sprintf("%s does not advertise session/load; session %s cannot be resumed", w.parser.agentName(), w.req.ResumeID)})
			w.done(c)
			return
		}
		c.Write(w.parser.Request("session/load", sessionParams{SessionID: w.req.ResumeID, Cwd: w.cwd, McpServers: mcpServers(w.req.MCPServers)}))
	case "session/new":
		if rep.Err == nil {
			w.startSetup(c)
		}
	case "session/load":
		if rep.Err != nil {
			return
		}
		if w.p.def.LoadQuiet > 0 {
			w.quiet = true
			c.After(timerQuiet, w.p.def.LoadQuiet)
			return
		}
		w.startSetup(c)
	case "session/set_config_option", "session/set_model", "session/set_mode":
		call := w.inFlight
		w.inFlight = nil
		if rep.Err != nil && call != nil && call.what == "model" {
			c.Emit(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("cannot select model %q: %s", w.req.Model, rep.Err.Error())})
			return
		}
		w.nextSetup(c)
	}
}

// startSetup queues the model and mode requests, then sends the prompt.
func (w *wire) startSetup(c *procrun.Conn) {
	w.phase = phaseSetup
	if w.req.Model != "" {
		if m, params, ok := w.parser.ModelRequest(w.req.Model); ok {
			w.setup = append(w.setup, setupCall{what: "model", method: m, params: params})
		} else {
			c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "model_not_selectable",
				Text: fmt.Sprintf("%s offers no model selector; model %q is ignored", w.parser.agentName(), w.req.Model)})
		}
	}
	if w.req.Mode == agent.ModePlan {
		if m, params, ok := w.parser.ModeRequest("plan"); ok {
			w.setup = append(w.setup, setupCall{what: "mode", method: m, params: params})
		} else {
			c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "mode_not_selectable",
				Text: fmt.Sprintf("%s offers no plan mode; running in its default mode", w.parser.agentName())})
		}
	}
	w.nextSetup(c)
}

func (w *wire) nextSetup(c *procrun.Conn) {
	if len(w.setup) > 0 {
		call := w.setup[0]
		w.setup = w.setup[1:]
		w.inFlight = &call
		c.Write(w.parser.Request(call.method, call.params))
		return
	}
	w.prompt(c)
}

func (w *wire) prompt(c *procrun.Conn) {
	blocks := make([]ContentBlock, 0, len(w.req.Images)+1)
	if len(w.req.Images) > 0 && !w.parser.ImagePrompts() {
		c.Emit(agent.Event{Type: agent.EventSystem, Subtype: "images_dropped",
			Text: fmt.Sprintf("%s does not accept images; %d image(s) not sent", w.parser.agentName(), len(w.req.Images))})
	} else {
		for _, img := range w.req.Images {
			if img.MediaType == "" || len(img.Data) == 0 {
				continue
			}
			blocks = append(blocks, ContentBlock{Type: "image", MimeType: img.MediaType, Data: base64.StdEncoding.EncodeToString(img.Data)})
		}
	}
	blocks = append(blocks, ContentBlock{Type: "text", Text: w.req.Prompt})
	w.phase = phasePrompt
	c.After(timerStart, 0)
	c.Write(w.parser.Request("session/prompt", promptParams{SessionID: w.parser.SessionID(), Prompt: blocks}))
}

// Interrupt stops the turn natively: session/cancel and pending permission
// requests answered cancelled (the Session then waits InterruptTimeout for
// the prompt answer). Before the prompt was sent there is nothing to
// cancel: the agent is killed.
func (w *wire) Interrupt(c *procrun.Conn) error {
	if w.phase == phaseDone {
		return nil
	}
	if w.phase < phasePrompt {
		c.Logger().Info("cancelled before the prompt, stopping the agent")
		w.kill(c)
		return nil
	}
	c.Logger().Info("cancelling the turn")
	c.FlushEmit(w.parser, w.parser.Cancel())
	return nil
}

// Respond answers a permission request; a "cancel" answer stops the turn.
func (w *wire) Respond(resp agent.InteractionResponse, c *procrun.Conn) error {
	if err := c.Answer(w.parser, resp); err != nil {
		return err
	}
	if w.parser.Cancelling() {
		c.Stopping()
	}
	return nil
}

// End closes a turn the agent left without an answer (open requests).
func (w *wire) End(c *procrun.Conn) {
	for _, ev := range w.parser.EndTurn() {
		c.Emit(ev)
	}
}

// Outcome reports a session that does not exist (or cannot be loaded) as
// agent.ErrSessionNotFound, so that the caller starts a fresh one; the rest
// is the Session's mapping.
func (w *wire) Outcome(o procrun.Outcome, _ *procrun.Conn) error {
	if o.Fatal == nil && o.Terminal == "" && (w.parser.SessionNotFound() || w.notResumable) {
		return fmt.Errorf("%s session/load %s: %w", w.p.def.ID, w.req.ResumeID, agent.ErrSessionNotFound)
	}
	return nil
}
