// The JSON-line wire: the prompt on stdin (or none), one event record per
// stdout line, the CLI's process group ended with its run.

package jsonstream

import (
	"errors"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// finisher is a parser whose turn ends only with the CLI's exit (grok-cli
// prints no end record); exited reports a non-zero exit.
type finisher interface {
	Finish(exited bool) []agent.Event
}

// RunTokenEnv names the variable each run's CLI gets a random value in: a
// tool it started carries it in its environment, so the tool is found after
// the CLI exited even when it left the CLI's process group (OpenCode and
// Kilo start every shell command in a session of its own).
const RunTokenEnv = "THREADLINE_RUN_TOKEN"

// wire is one run on a procrun.Session: stdin written once and closed,
// every line to the dialect's parser, SIGINT to interrupt. Once the CLI
// exited its process group is killed, then every process that carries the
// run's token (tokenEntry), so no tool it started outlives the run.
type wire struct {
	procrun.LineWire        // Stdin: the prompt (nil: stdin is closed at once)
	tokenEntry       string // RunTokenEnv=<token>; "" sweeps nothing
}

var _ procrun.Wire = (*wire)(nil)

// Outcome kills what is left of the CLI's process group (a tool it left in
// the background) and the processes carrying the run's token, then lets a
// finishing parser end a turn that exited without a terminal event; the
// Session maps the rest. A run detached from its relay (the bot stopping)
// is still running: nothing is killed.
func (w *wire) Outcome(o procrun.Outcome, c *procrun.Conn) error {
	if errors.Is(o.ExitErr, procrun.ErrDetached) {
		return nil
	}
	c.Kill()
	if w.tokenEntry != "" {
		if n := sweep(w.tokenEntry); n > 0 {
			c.Logger().Info("killed processes the agent left behind", "count", n)
		}
	}
	if f, ok := w.Parser.(finisher); ok && o.Terminal == "" && !o.Cancelled && o.Fatal == nil {
		for _, ev := range f.Finish(o.ExitErr != nil) {
			c.Emit(ev)
		}
	}
	return nil
}
