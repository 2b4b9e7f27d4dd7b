// Benchmarks of the parser and the read path on the ~50 MB reference stream
// (issue 19).

package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
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

// BenchmarkReadPath measures what the read path adds to parsing (issue 19,
// target 2). Every iteration runs the same lines twice, back to back, so the
// two figures share the machine's load: "parse" feeds the pre-split lines to
// a Parser (as BenchmarkParseReference does); "session" runs them through
// Provider.Run, the production path, with the test binary as a CLI that
// writes them to its stdout: procrun.Session's reader, the wire's Parse, the
// Conn's ledger and the emitter. The lines are those of $CLAUDE_STREAM_BENCH
// without its result lines, so that one turn carries them all; can_use_tool
// requests are declined by policy on both sides (the run has no answerer).
// A run of an empty stream in the same iteration measures the fixed cost of
// a run (exec of the CLI, its exit): start-ms. overhead-% is the session's
// time without that fixed cost over the parse time, minus one;
// overhead-all-% counts it in. cpu-overhead-% compares the CPU time of this
// process (getrusage: the reader, the loop, the parser and the GC, not the
// child; the empty run's taken off), which a loaded machine disturbs far
// less than the wall clock.
func BenchmarkReadPath(b *testing.B) {
	path := os.Getenv("CLAUDE_STREAM_BENCH")
	if path == "" {
		b.Skip("CLAUDE_STREAM_BENCH is not set (go run ./providers/claude/internal/refstream writes the stream)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var (
		lines  [][]byte
		stream bytes.Buffer
	)
	for l := range bytes.Lines(data) {
		l = bytes.TrimSuffix(l, []byte("\n"))
		var r struct{ Type string }
		if len(l) == 0 || json.Unmarshal(l, &r) == nil && r.Type == "result" {
			continue
		}
		lines = append(lines, l)
		stream.Write(l)
		stream.WriteByte('\n')
	}
	file := filepath.Join(b.TempDir(), "stream.jsonl")
	empty := filepath.Join(b.TempDir(), "empty.jsonl")
	if err := os.WriteFile(file, stream.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	p := New(nil, Options{HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }})
	req := agent.RunRequest{Prompt: "go", Bin: exe, Approval: agent.ApprovalDeny, Env: map[string]string{envStream: file}}
	startReq := req
	startReq.Env = map[string]string{envStream: empty}
	b.SetBytes(int64(stream.Len()))
	b.ReportAllocs()
	var parseTime, sessionTime, startTime, parseCPU, sessionCPU, startCPU time.Duration
	var parsed, emitted int
	for b.Loop() {
		start, cpu := time.Now(), cpuTime(b)
		parsed = 0
		parser := NewParser("")
		parser.AutoDecision = agent.DecisionDecline
		for _, l := range lines {
			evs, _ := parser.Parse(l)
			parsed += len(evs)
			parser.TakeOutgoing()
		}
		parseTime += time.Since(start)
		parseCPU += cpuTime(b) - cpu

		start, cpu = time.Now(), cpuTime(b)
		emitted = 0
		err := p.Run(b.Context(), req, func(agent.Event) { emitted++ })
		sessionTime += time.Since(start)
		sessionCPU += cpuTime(b) - cpu
		if !errors.Is(err, agent.ErrRunFailed) { // the stream has no result line
			b.Fatalf("run: %v", err)
		}

		start, cpu = time.Now(), cpuTime(b)
		err = p.Run(b.Context(), startReq, func(agent.Event) {})
		startTime += time.Since(start)
		startCPU += cpuTime(b) - cpu
		if !errors.Is(err, agent.ErrRunFailed) {
			b.Fatalf("empty run: %v", err)
		}
	}
	// The session adds one event: run.failed, as the stream has no result.
	if emitted != parsed+1 {
		b.Fatalf("session emitted %d events, the parser %d (+1 for the end)", emitted, parsed)
	}
	mb := float64(stream.Len()) * float64(b.N) / 1e6
	b.ReportMetric(mb/parseTime.Seconds(), "parse-MB/s")
	b.ReportMetric(mb/sessionTime.Seconds(), "session-MB/s")
	b.ReportMetric(100*((sessionTime-startTime).Seconds()/parseTime.Seconds()-1), "overhead-%")
	b.ReportMetric(100*(sessionTime.Seconds()/parseTime.Seconds()-1), "overhead-all-%")
	b.ReportMetric(100*((sessionCPU-startCPU).Seconds()/parseCPU.Seconds()-1), "cpu-overhead-%")
	b.ReportMetric(float64(startTime.Milliseconds())/float64(b.N), "start-ms")
	b.ReportMetric(float64(emitted), "events/op")
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
