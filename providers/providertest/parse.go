// Helpers for a provider's parser unit tests: one line parsed, the event
// types, a transcript rendered for its golden file.

package providertest

import (
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// MustParse parses one line with p and fails t at once on a parse error.
func MustParse(t testing.TB, p procrun.LineParser, line string) []agent.Event {
	t.Helper()
	evs, err := p.Parse([]byte(line))
	if err != nil {
		t.Fatalf("Parse(%.80s): %v", line, err)
	}
	return evs
}

// Types returns the type of each event, in order.
func Types(evs []agent.Event) []agent.EventType {
	out := make([]agent.EventType, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// RenderLines parses each of lines with p into a new Recorder (its parse
// error, then its events: Recorder.Parsed) and then calls after (when not
// nil) with it, e.g. to write the stdin lines the parser asked for
// (Recorder.Stdin). The caller writes what ends the transcript and takes
// Bytes for the golden file.
func RenderLines(t testing.TB, p procrun.LineParser, lines [][]byte, after func(r *Recorder)) *Recorder {
	t.Helper()
	r := NewRecorder(t)
	for _, l := range lines {
		r.Parsed(p.Parse(l))
		if after != nil {
			after(r)
		}
	}
	return r
}
