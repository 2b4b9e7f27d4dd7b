// Package outputcap bounds the text a run may produce: an agent flooding
// its output (a runaway loop printing deltas, a tool dumping a disk image)
// would otherwise fill the event store and keep the chat platform busy for
// as long as it goes on. Past the limit the run is stopped and ends failed,
// saying why; nothing past the limit is passed on.
package outputcap

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// DefaultBytes is the limit when none is configured: 20 MB of text per run.
const DefaultBytes = 20 << 20

// ErrTooMuchOutput is the error of a run stopped at the limit.
var ErrTooMuchOutput = fmt.Errorf("%w: too much output", agent.ErrRunFailed)

// Wrap returns providers whose runs are stopped once their text (answer
// and reasoning deltas, tool output, a tool's final output) passes max
// bytes; max <= 0 is DefaultBytes.
func Wrap(providers []agent.Provider, max int64, log *slog.Logger) []agent.Provider {
	if max <= 0 {
		max = DefaultBytes
	}
	if log == nil {
		log = slog.Default()
	}
	out := make([]agent.Provider, len(providers))
	for i, p := range providers {
		out[i] = &provider{Provider: p, max: max, log: log}
	}
	return out
}

type provider struct {
	agent.Provider
	max int64
	log *slog.Logger
}

// Size is the text an event carries, as counted against the limit.
func Size(e agent.Event) int64 {
	switch e.Type {
	case agent.EventAssistantDelta, agent.EventReasoningDelta, agent.EventToolOutput:
		return int64(len(e.Text))
	case agent.EventToolCompleted:
		if e.Tool != nil {
			return int64(len(e.Tool.Output))
		}
	}
	return 0
}

// Run runs the turn, counting its text; at the limit it cancels the
// provider's context, drops what still comes and turns the provider's
// terminal event into run.failed saying why.
func (p *provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		total    int64
		stopped  bool
		terminal bool
	)
	reason := fmt.Sprintf("its output passed the limit of %s (limits.run_output_bytes), so it was stopped", shipgate.HumanSize(p.max))
	err := p.Provider.Run(ctx, req, func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		if terminal {
			return
		}
		if stopped {
			if e.Type.Terminal() {
				terminal = true
				emit(agent.Event{Type: agent.EventRunFailed, Text: reason})
			}
			return
		}
		if total += Size(e); total > p.max {
			stopped = true
			p.log.Warn("run stopped: too much output", logkey.ChatID, req.ChatID, logkey.RunID, req.RunID,
				logkey.Size, total, logkey.Max, p.max)
			cancel()
			if e.Type.Terminal() {
				terminal = true
				emit(agent.Event{Type: agent.EventRunFailed, Text: reason})
			}
			return
		}
		terminal = e.Type.Terminal()
		emit(e)
	})
	mu.Lock()
	defer mu.Unlock()
	if !stopped {
		return err
	}
	if !terminal {
		// The provider returned without its terminal event.
		terminal = true
		emit(agent.Event{Type: agent.EventRunFailed, Text: reason})
	}
	return fmt.Errorf("%w (%s)", ErrTooMuchOutput, shipgate.HumanSize(p.max))
}
