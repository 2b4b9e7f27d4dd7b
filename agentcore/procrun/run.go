// Run: the generic one-way line-protocol loop.

package procrun

import (
	"context"
	"errors"
	"fmt"
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
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	spec.Stdin = opts.Stdin != nil
	proc, err := Start(ctx, logger, spec)
	if err != nil {
		return err
	}
	for _, l := range opts.Stdin {
		if err := proc.WriteLine(l); err != nil {
			logger.Warn("write stdin", "err", err)
			break
		}
	}
	_ = proc.CloseStdin()

	grace := opts.StopGrace
	if grace <= 0 {
		grace = 5 * time.Second
	}
	stopped := make(chan struct{})
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		close(stopped)
		_ = proc.Signal(interruptSignal)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			logger.Warn("child ignored interrupt, killing", "grace", grace)
			_ = proc.Kill()
		}
	}()

	out := agent.Stream{Emit: emit, Log: logger}
	readErr := proc.Each(func(line []byte) error {
		evs, err := parser.Parse(line)
		for _, ev := range evs {
			out.Send(ev)
		}
		return err
	})
	terminal := out.Terminal
	waitErr := proc.Wait()
	close(done)
	if readErr != nil {
		logger.Warn("read stdout", "err", readErr)
	}

	cancelled := isClosed(stopped)
	switch {
	case terminal == agent.EventRunFailed:
		if waitErr != nil {
			return fmt.Errorf("%w: %w", agent.ErrRunFailed, waitErr)
		}
		return agent.ErrRunFailed
	case terminal != "":
		if waitErr != nil && !cancelled && terminal == agent.EventRunCompleted {
			logger.Warn("child exited non-zero after completion", "err", waitErr)
		}
		return nil
	case cancelled:
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled"})
		return nil
	}
	msg := fmt.Sprintf("%s exited without a result", nameOf(opts.Provider, spec.Bin))
	if tail := StderrTail(proc.Stderr(), 512); tail != "" {
		msg += ": " + tail
	}
	emit(agent.Event{Type: agent.EventRunFailed, Text: msg})
	if waitErr != nil {
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, waitErr)
	}
	return fmt.Errorf("%w: %s", agent.ErrRunFailed, msg)
}

func nameOf(id agent.ProviderID, bin string) string {
	if id != "" {
		return string(id)
	}
	return bin
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// IsExit reports whether err carries a *ProcessError and returns it.
func IsExit(err error) (*ProcessError, bool) {
	var pe *ProcessError
	ok := errors.As(err, &pe)
	return pe, ok
}
