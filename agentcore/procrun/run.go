// Run: the generic one-way line-protocol loop.

package procrun

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// LineParser turns one stdout line into normalized events. A returned error
// is logged and the line skipped.
type LineParser interface {
	Parse(line []byte) ([]agent.Event, error)
}

// RunOptions tunes Run.
type RunOptions struct {
	// Provider names the agent in messages and native envelopes.
	Provider agent.ProviderID
	// Stdin, when not nil, is written to the child's stdin (as one write per
	// element) before stdin is closed.
	Stdin [][]byte
	// StopGrace is how long Run waits after SIGINT on cancellation before it
	// kills the child. Zero means 5 s.
	StopGrace time.Duration
}

// Run starts spec, feeds every stdout line to parser and emits the events from
// the calling goroutine until the child exits.
//
// Outcomes: a cancelled ctx interrupts the child (SIGINT, then a kill after
// StopGrace), emits run.interrupted unless the parser already emitted a
// terminal event, and returns nil. A parser-emitted run.failed returns an
// error wrapping agent.ErrRunFailed (and the *ProcessError when the exit was
// non-zero). A child that exits without any terminal event is a failure: Run
// emits run.failed with the stderr tail and returns agent.ErrRunFailed; it
// never synthesizes a completion. Events after the first terminal one are
// dropped.
func Run(ctx context.Context, logger *slog.Logger, spec Spec, parser LineParser, opts RunOptions, emit func(agent.Event)) error {
	grace := opts.StopGrace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	return Session{
		Provider:         opts.Provider,
		Spec:             spec,
		Wire:             &lineWire{parser: parser, stdin: opts.Stdin},
		Logger:           logger,
		InterruptTimeout: grace,
		ExitTimeout:      -1,
		Interrupted:      "cancelled",
	}.Run(ctx, emit)
}

// lineWire is the Wire of a one-way line protocol: stdin is written once and
// closed, every line goes to the parser, the interrupt is SIGINT.
type lineWire struct {
	parser LineParser
	stdin  [][]byte
}

func (w *lineWire) Start(c *Conn) error {
	for _, l := range w.stdin {
		c.Write(l)
	}
	c.CloseStdin()
	return nil
}

func (w *lineWire) Line(line []byte, c *Conn) error {
	evs, err := w.parser.Parse(line)
	for _, ev := range evs {
		c.Emit(ev)
	}
	return err
}

func (w *lineWire) Respond(agent.InteractionResponse, *Conn) error {
	return agent.ErrUnknownInteraction // never reached: nothing is ever pending
}

func (w *lineWire) Interrupt(*Conn) error { return ErrNoNative }

func (w *lineWire) Outcome(Outcome, *Conn) error { return nil }

func nameOf(id agent.ProviderID, bin string) string {
	if id != "" {
		return string(id)
	}
	return bin
}

// IsExit reports whether err carries a *ProcessError and returns it.
func IsExit(err error) (*ProcessError, bool) {
	var pe *ProcessError
	ok := errors.As(err, &pe)
	return pe, ok
}
