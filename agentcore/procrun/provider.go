// OneShot: the part of a one-way CLI provider (a print mode that asks
// nothing: jsonstream, plain, kimi) that is the same for all of them.

package procrun

import (
	"context"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// OneShot is what a one-way CLI provider holds beside its options: its id,
// its logger (ProviderLogger), its install hint and the grace after SIGINT.
// A provider embeds it: ID is its agent.Provider method; Begin and Session
// are the start and the loop of each run.
type OneShot struct {
	id          agent.ProviderID
	logger      *slog.Logger
	installHint string
	stopGrace   time.Duration
}

// NewOneShot returns the OneShot of provider id: logger (nil discards)
// carries its agent key, a not-installed error the install hint, and a
// cancelled run is killed stopGrace after SIGINT.
func NewOneShot(logger *slog.Logger, id agent.ProviderID, installHint string, stopGrace time.Duration) OneShot {
	return OneShot{id: id, logger: ProviderLogger(logger, id), installHint: installHint, stopGrace: stopGrace}
}

// ArgvLimitOrDefault is limit, or DefaultArgvLimit when limit is not
// positive: a provider's ArgvLimit option (the longest prompt it passes as
// one argument) in New.
func ArgvLimitOrDefault(limit int) int {
	if limit <= 0 {
		return DefaultArgvLimit
	}
	return limit
}

// ID returns the provider id.
func (o OneShot) ID() agent.ProviderID { return o.id }

// Begin starts a run of req once its command line is built: it returns the
// run's logger (the provider's with the chat and run ids) and false, after
// run.interrupted, when ctx is already cancelled; else it drops req's images
// (DropImages with text: the CLI takes a text prompt) and logs that a fork
// starts fresh when the CLI has no native fork.
func (o OneShot) Begin(ctx context.Context, req agent.RunRequest, emit func(agent.Event), nativeFork bool, text string) (*slog.Logger, bool) {
	logger := o.logger.With(logkey.ChatID, req.ChatID, logkey.RunID, req.RunID)
	if ctx.Err() != nil {
		emit(agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled before start"})
		return logger, false
	}
	DropImages(logger, req, emit, text)
	if req.Fork && req.ResumeID != "" && !nativeFork {
		logger.Info("no native fork; starting a fresh session")
	}
	return logger, true
}

// Session is the loop of one run of spec over w, logged to logger (Begin's):
// a cancelled run gets SIGINT, then the kill after the grace, and ends
// run.interrupted "cancelled"; a not-installed error names the install hint.
func (o OneShot) Session(logger *slog.Logger, spec Spec, w Wire) Session {
	return Session{
		Provider: o.id, Spec: spec, Wire: w, Logger: logger,
		InstallHint:      o.installHint,
		InterruptTimeout: o.stopGrace,
		Interrupted:      "cancelled",
	}
}

// LineWire is the Wire of a one-way line protocol: OneWay's start, every
// stdout line to Parser, nothing more at the exit. A provider's wire may
// embed it and add its own Outcome.
type LineWire struct {
	OneWay
	Parser LineParser
}

var _ Wire = (*LineWire)(nil)

// Line feeds one stdout line to the parser and emits its events.
func (w *LineWire) Line(line []byte, c *Conn) error {
	evs, err := w.Parser.Parse(line)
	for _, ev := range evs {
		c.Emit(ev)
	}
	return err
}

// Outcome leaves the exit to the Session.
func (w *LineWire) Outcome(Outcome, *Conn) error { return nil }
