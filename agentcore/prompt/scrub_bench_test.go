package prompt

import (
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
)

// BenchmarkScrubDeltas is the per-event cost of scrubbing a run's assistant
// deltas (about 40 bytes each, no secret in them) with a deployment's worth of
// secrets configured.
func BenchmarkScrubDeltas(b *testing.B) {
	red := redact.New("xoxb-123-456-secret", "xapp-1-A0123-987654321-abcdef", "hunter22", "another-secret-value",
		"project-secret-1", "postgres://threadline:pa55word@db.internal:5432/threadline", "pa55word", "sk-ant-api03-abcdefghijklmnop")
	text := strings.Repeat("Here is some ordinary agent output with code and words. ", 200)
	var evs []agent.Event
	for rest := text; rest != ""; {
		k := min(len(rest), 37)
		evs = append(evs, agent.Event{Type: agent.EventAssistantDelta, Text: rest[:k]})
		rest = rest[k:]
	}
	n := 0
	emit := func(agent.Event) { n++ }
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		rs := newRunScrub(red)
		for _, ev := range evs {
			rs.events(ev, emit)
		}
		rs.flushAll(emit)
	}
}
