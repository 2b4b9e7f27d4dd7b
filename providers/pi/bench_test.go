// BenchmarkParseReference: the pi parser on a reference stream of a few MB
// built from the captured pi RPC transcripts (issue 19).

package pi

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// Reference stream shape, as the Claude and Codex ones': every delta line
// repeated refDeltaRepeat times, the unit repeated to at least
// refStreamBytes.
const (
	refDeltaRepeat = 8
	refStreamBytes = 8 << 20
)

// refStep is one step of a run: a pi line to parse, or what the driver sent
// that the provider tells the parser (a prompt, an abort).
type refStep struct {
	line   []byte // pi → client, compact
	prompt string // the prompt's command id
	abort  bool
}

// referenceRuns returns the reference stream as runs: the transcripts of
// $PI_STREAM_REFERENCE (default testdata, the captures of
// ../shared/reference/acp-pi/transcripts), in file-name order, each delta
// line repeated; the transcripts repeated until the pi lines reach the size.
// size counts the pi lines with their newlines.
func referenceRuns(b *testing.B) (runs [][]refStep, size int64) {
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
	slices.Sort(files)
	var unit [][]refStep
	for _, f := range files {
		var run []refStep
		for _, l := range providertest.ReadTranscript(b, f) {
			switch l.Dir {
			case "send":
				var cmd struct {
					Type string `json:"type"`
					ID   string `json:"id"`
				}
				_ = json.Unmarshal(l.Msg, &cmd)
				switch cmd.Type {
				case "prompt":
					run = append(run, refStep{prompt: cmd.ID})
				case "abort":
					run = append(run, refStep{abort: true})
				}
			case "recv":
				var buf bytes.Buffer
				if err := json.Compact(&buf, l.Msg); err != nil {
					b.Fatal(err)
				}
				n := 1
				if isDelta(buf.Bytes()) {
					n = refDeltaRepeat
				}
				for range n {
					run = append(run, refStep{line: buf.Bytes()})
				}
			}
		}
		unit = append(unit, run)
	}
	for size < refStreamBytes {
		for _, run := range unit {
			runs = append(runs, run)
			for _, s := range run {
				if s.line != nil {
					size += int64(len(s.line)) + 1
				}
			}
		}
	}
	return runs, size
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
// does, and a run's pending failure is settled at its end. SetBytes counts
// the pi lines with their newlines.
func BenchmarkParseReference(b *testing.B) { benchReference(b, false) }

// BenchmarkParseReferenceStd is the path before the single-pass decoder,
// for the comparison in one run: every line through json.Unmarshal.
func BenchmarkParseReferenceStd(b *testing.B) { benchReference(b, true) }

func benchReference(b *testing.B, stdOnly bool) {
	runs, size := referenceRuns(b)
	b.SetBytes(size)
	b.ReportAllocs()
	var events, errs int
	for b.Loop() {
		events, errs = 0, 0
		for _, run := range runs {
			p := NewParser("")
			p.dec.stdOnly = stdOnly
			for _, s := range run {
				switch {
				case s.line != nil:
					evs, err := p.Parse(s.line)
					if err != nil {
						errs++
					}
					events += len(evs)
					p.TakeOutgoing()
				case s.abort:
					p.Interrupting = true
				case !p.Active():
					p.StartTurn(s.prompt)
				}
			}
			events += len(p.Settle())
		}
	}
	b.ReportMetric(float64(events), "events/op")
	b.ReportMetric(float64(errs), "errors/op")
}
