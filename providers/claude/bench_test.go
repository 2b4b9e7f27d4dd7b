// BenchmarkParseReference: the parser on the ~50 MB reference stream (issue 19).

package claude

import (
	"bytes"
	"os"
	"testing"
)

// BenchmarkParseReference parses the file named by $CLAUDE_STREAM_BENCH
// (written by `go run ./providers/claude/internal/refstream`) line by line
// through Parse, as the session's wire does, with one parser per pass.
// Lines are split before the timer starts; SetBytes counts their newlines.
func BenchmarkParseReference(b *testing.B) {
	path := os.Getenv("CLAUDE_STREAM_BENCH")
	if path == "" {
		b.Skip("CLAUDE_STREAM_BENCH is not set (go run ./providers/claude/internal/refstream writes the stream)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var lines [][]byte
	for l := range bytes.Lines(data) {
		if l = bytes.TrimSuffix(l, []byte("\n")); len(l) > 0 {
			lines = append(lines, l)
		}
	}
	b.SetBytes(int64(len(data))) // every line with its newline
	b.ReportAllocs()
	var events, errs int
	for b.Loop() {
		events, errs = 0, 0
		p := NewParser("")
		for _, l := range lines {
			evs, err := p.Parse(l)
			if err != nil {
				errs++
			}
			events += len(evs)
			p.TakeOutgoing()
		}
	}
	b.ReportMetric(float64(events), "events/op")
	b.ReportMetric(float64(errs), "errors/op")
}
