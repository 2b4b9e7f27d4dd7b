// Reference streams (issue 19): the stream of a few MB that a provider's
// BenchmarkParseReference feeds its parser, built from the provider's
// captured transcripts in the Claude reference stream's shape.

package providertest

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
)

// The reference stream's shape, as the Claude and Codex ones': every delta
// line stands RefDeltaRepeat times, and the transcripts are repeated until
// the lines reach RefStreamBytes.
const (
	RefDeltaRepeat = 8
	RefStreamBytes = 8 << 20
)

// RefRun is one transcript of a reference stream: one connection, one
// parser. Steps are what the benchmark does in turn (parse a line, apply
// what the client sent); Bytes counts the run's lines with a newline each.
type RefRun[S any] struct {
	File  string
	Steps []S
	Bytes int64
}

// RefSource says how a provider's transcripts become runs.
type RefSource[S any] struct {
	// Recv and Send are the directions of the CLI's lines and of the
	// client's messages in the transcripts ("recv" and "send" in the ACP
	// and pi captures, "s2c" and "c2s" in the codex ones).
	Recv, Send string
	// Line is the step that parses a CLI line (compacted; it may be shared
	// by the steps of a repeated line).
	Line func(line []byte) S
	// IsDelta reports a streamed chunk, which stands repeat times.
	IsDelta func(line []byte) bool
	// Sent is the step, if any, of a message the client sent; nil leaves
	// out the client's messages.
	Sent func(t testing.TB, msg json.RawMessage) (S, bool)
}

// RefUnit reads files, in name order, one run each: every CLI line
// compacted and its step repeated repeat times when it is a delta, the
// client's messages made steps by src.Sent. The lines are split here, so a
// benchmark's timer sees only the parsing.
func RefUnit[S any](t testing.TB, files []string, src RefSource[S], repeat int) []RefRun[S] {
	t.Helper()
	var unit []RefRun[S]
	for _, f := range slices.Sorted(slices.Values(files)) {
		run := RefRun[S]{File: f}
		for _, l := range ReadTranscript(t, f) {
			switch {
			case l.Dir == src.Recv:
				var buf bytes.Buffer
				if err := json.Compact(&buf, l.Msg); err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				line, n := buf.Bytes(), 1
				if src.IsDelta(line) {
					n = repeat
				}
				for range n {
					run.Steps = append(run.Steps, src.Line(line))
				}
				run.Bytes += int64(n) * int64(len(line)+1)
			case l.Dir == src.Send && src.Sent != nil:
				if s, ok := src.Sent(t, l.Msg); ok {
					run.Steps = append(run.Steps, s)
				}
			}
		}
		unit = append(unit, run)
	}
	return unit
}

// RefStream repeats unit's runs, in order, until their lines reach
// RefStreamBytes (none when unit has no line); size counts the lines with
// their newlines (what a benchmark's SetBytes takes).
func RefStream[S any](unit []RefRun[S]) (runs []RefRun[S], size int64) {
	var unitBytes int64
	for _, run := range unit {
		unitBytes += run.Bytes
	}
	for unitBytes > 0 && size < RefStreamBytes {
		for _, run := range unit {
			runs = append(runs, run)
			size += run.Bytes
		}
	}
	return runs, size
}

// BenchRuns is the loop of a BenchmarkParseReference: SetBytes(size) (the
// lines with their newlines), then every iteration feeds each of runs to
// parse, which parses it with a new parser and says how many events it
// gave and how many lines failed; events/op and errors/op are the last
// iteration's sums.
func BenchRuns[R any](b *testing.B, runs []R, size int64, parse func(run R) (events, errs int)) {
	b.Helper()
	b.SetBytes(size)
	b.ReportAllocs()
	var events, errs int
	for b.Loop() {
		events, errs = 0, 0
		for _, run := range runs {
			e, n := parse(run)
			events, errs = events+e, errs+n
		}
	}
	b.ReportMetric(float64(events), "events/op")
	b.ReportMetric(float64(errs), "errors/op")
}
