// BenchmarkParseReference: the pi parser on a reference stream of a few MB
// built from the captured pi RPC transcripts (issue 19).

package pi

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// refStep is one step of a run: a pi line to parse, or the driver's prompt
// or abort (line nil).
type refStep struct {
	line []byte // pi → client, compact
	sent command
}

// referenceRuns returns the reference stream (providertest.RefStream) of
// the transcripts of $PI_STREAM_REFERENCE (default testdata, the captures
// of ../shared/reference/acp-pi/transcripts), each delta line repeated.
// size counts the pi lines with their newlines.
func referenceRuns(b *testing.B) (runs []providertest.RefRun[refStep], size int64) {
	dir := os.Getenv("PI_STREAM_REFERENCE")
	if dir == "" {
		dir = "testdata"
	}
	var files []string
	for _, f := range providertest.Inputs(b, filepath.Join(dir, "pi-*.jsonl")) {
		if !strings.Contains(f, "fake-llm") {
			files = append(files, f)
		}
	}
	return providertest.RefStream(providertest.RefUnit(b, files, providertest.RefSource[refStep]{
		Recv: "recv", Send: "send",
		Line:    func(l []byte) refStep { return refStep{line: l} },
		IsDelta: isDelta,
		Sent: func(_ testing.TB, msg json.RawMessage) (refStep, bool) {
			c := sentCommand(msg)
			return refStep{sent: c}, c.Type == "prompt" || c.Type == "abort"
		},
	}, providertest.RefDeltaRepeat))
}

// isDelta reports a message_update carrying a text, thinking or tool-call
// delta.
func isDelta(l []byte) bool {
	var r struct {
		Type  string `json:"type"`
		Event struct {
			Type string `json:"type"`
		} `json:"assistantMessageEvent"`
	}
	return json.Unmarshal(l, &r) == nil && r.Type == "message_update" && strings.HasSuffix(r.Event.Type, "_delta")
}

// BenchmarkParseReference feeds the reference stream's pi lines, split
// before the timer starts, through Parser.Parse (the run's per-line path,
// session.go), with a new Parser for each transcript's run; the driver's
// prompts start turns and its abort sets Interrupting, as the golden replay
// does (command.apply), and a run's pending failure is settled at its end.
// SetBytes counts the pi lines with their newlines.
func BenchmarkParseReference(b *testing.B) { benchReference(b, false) }

// BenchmarkParseReferenceStd is the path before the single-pass decoder,
// for the comparison in one run: every line through json.Unmarshal.
func BenchmarkParseReferenceStd(b *testing.B) { benchReference(b, true) }

func benchReference(b *testing.B, stdOnly bool) {
	runs, size := referenceRuns(b)
	providertest.BenchRuns(b, runs, size, func(run providertest.RefRun[refStep]) (events, errs int) {
		p := NewParser("")
		p.dec.stdOnly = stdOnly
		for _, s := range run.Steps {
			if s.line == nil {
				s.sent.apply(p)
				continue
			}
			evs, err := p.Parse(s.line)
			if err != nil {
				errs++
			}
			events += len(evs)
			p.TakeOutgoing()
		}
		return events + len(p.Settle()), errs
	})
}
