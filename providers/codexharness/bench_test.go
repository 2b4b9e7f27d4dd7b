// BenchmarkParseReference: the notification parser on a reference stream
// of a few MB built from the codex app-server captures (issue 19).

package codexharness

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// referenceRuns returns the reference stream (providertest.RefStream) of
// the server → client lines of every transcript in $CODEX_STREAM_REFERENCE
// (default the reference captures in ../shared beside the repository), each
// delta notification repeated. Each transcript is one run (one thread, one
// parser), as in production.
func referenceRuns(b *testing.B) (runs []providertest.RefRun[[]byte], size int64) {
	dir := os.Getenv("CODEX_STREAM_REFERENCE")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared", "reference", "codex-app-server", "transcripts")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	files = slices.DeleteFunc(files, func(f string) bool { return filepath.Base(f) == "rollout-approve.jsonl" }) // codex's own log, not the wire
	if len(files) == 0 {
		b.Skipf("no app-server transcripts in %s (set CODEX_STREAM_REFERENCE)", dir)
	}
	return providertest.RefStream(providertest.RefUnit(b, files, providertest.RefSource[[]byte]{
		Recv: "s2c", Line: func(l []byte) []byte { return l }, IsDelta: isDelta,
	}, providertest.RefDeltaRepeat))
}

// isDelta reports a streamed text, reasoning or tool output notification.
func isDelta(l []byte) bool {
	m, err := jsonrpc.Decode(l)
	if err != nil || m.Kind != jsonrpc.KindNotification {
		return false
	}
	switch m.Method {
	case "item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta", "item/reasoning/textDelta",
		"item/commandExecution/outputDelta", "item/fileChange/outputDelta":
		return true
	}
	return false
}

// BenchmarkParseReference feeds the reference stream's lines, split before
// the timer starts, through the per-line path of a run (parseLine), with a
// new Parser for each transcript's run. SetBytes counts the lines with
// their newlines.
func BenchmarkParseReference(b *testing.B) { benchReference(b, parseLine) }

// BenchmarkParseReferenceStd is the per-line path with encoding/json alone
// (stdDecodeLine: no fastNotif).
func BenchmarkParseReferenceStd(b *testing.B) {
	benchReference(b, func(p *Parser, l []byte) ([]agent.Event, error) { return parseLineWith(p, l, stdDecodeLine) })
}

// BenchmarkParseReferenceTwoStep is the path before decodeLine, for the
// comparison in one run: jsonrpc.Decode, then the params decoded again.
func BenchmarkParseReferenceTwoStep(b *testing.B) {
	benchReference(b, func(p *Parser, l []byte) ([]agent.Event, error) {
		m, err := jsonrpc.Decode(l)
		if err != nil || m.Kind != jsonrpc.KindNotification || m.Method == "serverRequest/resolved" {
			return nil, err
		}
		return p.Parse(m.Method, m.Params, l)
	})
}

func benchReference(b *testing.B, parseLine func(*Parser, []byte) ([]agent.Event, error)) {
	runs, size := referenceRuns(b)
	providertest.BenchRuns(b, runs, size, func(run providertest.RefRun[[]byte]) (events, errs int) {
		p := NewParser("bench")
		for _, l := range run.Steps {
			evs, err := parseLine(p, l)
			if err != nil {
				errs++
			}
			events += len(evs)
		}
		return events, errs
	})
}

// parseLine is the notification path of run.handleLine.
func parseLine(p *Parser, l []byte) ([]agent.Event, error) { return parseLineWith(p, l, decodeLine) }

func parseLineWith(p *Parser, l []byte, decodeLine func([]byte) (jsonrpc.Message, params, error)) ([]agent.Event, error) {
	m, params, err := decodeLine(l)
	if err != nil || m.Kind != jsonrpc.KindNotification || m.Method == "serverRequest/resolved" {
		return nil, err
	}
	return p.parse(m.Method, params, l)
}
