// BenchmarkParseReference: the ACP parser on a reference stream of a few MB
// built from the captured opencode, qwen and gemini transcripts (issue 19).

package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/providertest"
)

// refStep is one step of a run: an agent line to parse, or what the client
// sent (line nil): its session/cancel, or a request to track (its answer is
// routed by id).
type refStep struct {
	line []byte // agent → client, compact
	clientMessage
}

// refRun is one transcript: one connection, one parser.
type refRun struct {
	def   Definition
	steps []refStep
}

// referenceRuns returns the reference stream (providertest.RefStream) of
// referenceUnit's transcripts, each message chunk repeated. size counts the
// agent lines with their newlines.
func referenceRuns(b *testing.B) (runs []refRun, size int64) {
	stream, size := providertest.RefStream(referenceSource(b, providertest.RefDeltaRepeat))
	return withDefinitions(b, stream), size
}

// referenceUnit is one run per transcript of $ACP_STREAM_REFERENCE
// (default testdata; the captures in ../shared/reference/acp-pi/transcripts
// keep qwen's 560 KB available_commands_update lines untrimmed), in
// file-name order, each message chunk repeated repeat times.
func referenceUnit(b testing.TB, repeat int) []refRun {
	return withDefinitions(b, referenceSource(b, repeat))
}

func referenceSource(b testing.TB, repeat int) []providertest.RefRun[refStep] {
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
	return providertest.RefUnit(b, files, providertest.RefSource[refStep]{
		Recv: "recv", Send: "send",
		Line:    func(l []byte) refStep { return refStep{line: l} },
		IsDelta: isChunk,
		Sent: func(t testing.TB, msg json.RawMessage) (refStep, bool) {
			m, ok := sentMessage(t, msg)
			return refStep{clientMessage: m}, ok && (m.cancel || m.method != "") // answers stay out: no answerer
		},
	}, repeat)
}

// withDefinitions gives each run the definition its transcript's name says.
func withDefinitions(b testing.TB, runs []providertest.RefRun[refStep]) []refRun {
	out := make([]refRun, len(runs))
	for i, r := range runs {
		out[i] = refRun{def: definitionFor(b, r.File), steps: r.Steps}
	}
	return out
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
	providertest.BenchRuns(b, runs, size, func(run refRun) (events, errs int) {
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
		return events, errs
	})
}
