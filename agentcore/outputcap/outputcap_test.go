package outputcap_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/outputcap"
)

// flood emits 1 KB deltas until its context ends (then run.interrupted),
// or n of them and run.completed; it counts what it emitted.
type flood struct {
	n       int
	emitted int
}

func (f *flood) ID() agent.ProviderID { return "flood" }

func (f *flood) Run(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
	chunk := strings.Repeat("x", 1024)
	for i := 0; f.n == 0 || i < f.n; i++ {
		if ctx.Err() != nil {
			emit(agent.Event{Type: agent.EventRunInterrupted})
			return ctx.Err()
		}
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: chunk})
		f.emitted++
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

func TestFloodStopsAtTheLimit(t *testing.T) {
	f := &flood{}
	p := outputcap.Wrap([]agent.Provider{f}, 64<<10, nil)[0]
	var text int64
	var last agent.Event
	n := 0
	err := p.Run(t.Context(), agent.RunRequest{ChatID: "c", RunID: "r"}, func(e agent.Event) {
		text += outputcap.Size(e)
		last = e
		n++
	})
	if !errors.Is(err, outputcap.ErrTooMuchOutput) || !errors.Is(err, agent.ErrRunFailed) {
		t.Fatalf("Run: %v", err)
	}
	if text > 64<<10 || text < 63<<10 {
		t.Errorf("%d bytes of text passed on, want the 64 KB up to the limit", text)
	}
	if last.Type != agent.EventRunFailed || !strings.Contains(last.Text, "limit of 64 KB (limits.run_output_bytes)") {
		t.Errorf("last event %+v", last)
	}
	if f.emitted > 66 {
		t.Errorf("the provider went on for %d chunks after the limit", f.emitted-64)
	}
}

func TestUnderTheLimitUnchanged(t *testing.T) {
	p := outputcap.Wrap([]agent.Provider{&flood{n: 10}}, 64<<10, nil)[0]
	var types []agent.EventType
	if err := p.Run(t.Context(), agent.RunRequest{}, func(e agent.Event) { types = append(types, e.Type) }); err != nil {
		t.Fatal(err)
	}
	if len(types) != 11 || types[10] != agent.EventRunCompleted {
		t.Errorf("events %v", types)
	}
}
