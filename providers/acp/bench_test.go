// BenchmarkParseReference: the ACP parser on a reference stream of a few MB
// built from the captured opencode, qwen and gemini transcripts (issue 19).

package acp

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/jsonrpc"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// Reference stream shape, as the Claude and Codex ones': every delta line
// repeated refDeltaRepeat times, the unit repeated to at least
// refStreamBytes.
const (
	refDeltaRepeat = 8
	refStreamBytes = 8 << 20
)

// refStep is one step of a run: an agent line to parse, or a request of
// the client to track (its answer is routed by id).
type refStep struct {
	line   []byte // agent → client, compact
	id     json.RawMessage
	method string
	cancel bool // the client's session/cancel
}

// refRun is one transcript: one connection, one parser.
type refRun struct {
	def   Definition
	steps []refStep
}

// referenceRuns returns the reference stream as runs: the transcripts of
// $ACP_STREAM_REFERENCE (default testdata; the captures in
// ../shared/reference/acp-pi/transcripts keep qwen's 560 KB
// available_commands_update lines untrimmed), in file-name order, each
// message chunk repeated; the transcripts repeated until the agent lines
// reach the size. size counts the agent lines with their newlines.
func referenceRuns(b *testing.B) (runs []refRun, size int64) {
	unit := referenceUnit(b, refDeltaRepeat)
	for size < refStreamBytes {
		for _, run := range unit {
			runs = append(runs, run)
			for _, s := range run.steps {
				if s.line != nil {
					size += int64(len(s.line)) + 1
				}
			}
		}
	}
	return runs, size
}

// referenceUnit is one run per transcript, each message chunk repeated
// repeat times.
func referenceUnit(b testing.TB, repeat int) (unit []refRun) {
	b.Helper()
	dir := os.Getenv("ACP_STREAM_REFERENCE")
	if dir == "" {
		dir = "testdata"
	}
	var files []string
	for _, f := range providertest.Inputs(b, filepath.Join(dir, "*.jsonl")) {
		if id, _, _ := strings.Cut(filepath.Base(f), "-"); slices.Contains([]string{"opencode", "qwen", "gemini"}, id) &&
			!strings.Contains(f, "fake-llm") {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	for _, f := range files {
		run := refRun{def: definitionFor(b, f)}
		for _, l := range providertest.ReadTranscript(b, f) {
			switch l.Dir {
			case "send":
				var m rpcMessage
				if err := json.Unmarshal(l.Msg, &m); err != nil {
					b.Fatal(err)
				}
				switch {
				case m.Method == "session/cancel":
					run.steps = append(run.steps, refStep{cancel: true})
				case m.Method != "" && jsonrpc.HasID(m.ID):
					run.steps = append(run.steps, refStep{id: m.ID, method: m.Method})
				}
			case "recv":
				var buf bytes.Buffer
				if err := json.Compact(&buf, l.Msg); err != nil {
					b.Fatal(err)
				}
				n := 1
				if isChunk(buf.Bytes()) {
					n = repeat
				}
				for range n {
					run.steps = append(run.steps, refStep{line: buf.Bytes()})
				}
			}
		}
		unit = append(unit, run)
	}
	return unit
}

// isChunk reports a streamed message or thought chunk.
func isChunk(l []byte) bool {
	var m struct {
		Method string `json:"method"`
		Params struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		} `json:"params"`
	}
	if json.Unmarshal(l, &m) != nil || m.Method != "session/update" {
		return false
	}
	return strings.HasSuffix(m.Params.Update.SessionUpdate, "_chunk")
}

// BenchmarkParseReference feeds the reference stream's agent lines, split
// before the timer starts, through Parser.Parse (the run's per-line path,
// session.go), with a new Parser for each transcript's run; the client's
// requests are tracked and its session/cancel applied as in the capture.
// SetBytes counts the agent lines with their newlines.
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
			p := NewParser(ParserOptions{Provider: run.def.ID, EmitSession: run.def.Resume, HoldReplay: run.def.LoadQuiet > 0,
				SessionNotFound: run.def.SessionNotFound, FS: &memFS{}})
			p.dec.stdOnly = stdOnly
			for _, s := range run.steps {
				switch {
				case s.line != nil:
					parsed, err := p.Parse(s.line)
					if err != nil {
						errs++
					}
					events += len(parsed.Events)
					p.TakeOutgoing()
				case s.cancel:
					events += len(p.Cancel())
					p.TakeOutgoing()
				default:
					p.Track(s.id, s.method)
				}
			}
		}
	}
	b.ReportMetric(float64(events), "events/op")
	b.ReportMetric(float64(errs), "errors/op")
}
