// Benchmarks of the parser and the read path on the ~50 MB reference stream
// (issue 19). To run them (the read path re-executes the test binary as the
// CLI, so build it where it may be executed, not in a noexec /tmp):
//
//	go run ./providers/claude/internal/refstream -o /tmp/claude-ref.jsonl
//	go test -c -o /work/bin/claude.test ./providers/claude/
//	cd providers/claude && CLAUDE_STREAM_BENCH=/tmp/claude-ref.jsonl \
//	    /work/bin/claude.test -test.run '^$' -test.bench 'ParseReference|ReadPath' -test.benchtime 10x
//
// On a loaded machine compare the read path's median ratios (overhead-%,
// cpu-overhead-%), which pair the two sides within each iteration, not the
// sums of ns/op across runs.

package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// referenceLines returns the lines (without their newlines) of the file
// named by $CLAUDE_STREAM_BENCH that keep passes, and their bytes with
// newlines; it skips the benchmark when the variable is unset.
func referenceLines(b *testing.B, keep func(line []byte) bool) (lines [][]byte, size int) {
	path := os.Getenv("CLAUDE_STREAM_BENCH")
	if path == "" {
		b.Skip("CLAUDE_STREAM_BENCH is not set (go run ./providers/claude/internal/refstream writes the stream)")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	for l := range bytes.Lines(data) {
		size += len(l)
		if l = bytes.TrimSuffix(l, []byte("\n")); len(l) > 0 && keep(l) {
			lines = append(lines, l)
		}
	}
	return lines, size
}

// BenchmarkParseReference parses the file named by $CLAUDE_STREAM_BENCH
// (written by `go run ./providers/claude/internal/refstream`) line by line
// through Parse, as the session's wire does, with one parser per pass.
// Lines are split before the timer starts; SetBytes counts their newlines.
func BenchmarkParseReference(b *testing.B) {
	lines, size := referenceLines(b, func([]byte) bool { return true })
	b.SetBytes(int64(size)) // every line with its newline
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
// Conn's ledger and the emitter, with the idle watchdog on as the prompt
// service sets it. The lines are those of $CLAUDE_STREAM_BENCH without its
// result lines, so that one turn carries them all; can_use_tool requests
// are declined by policy on both sides (the run has no answerer). A run of
// an empty stream in the same iteration measures the fixed cost of a run
// (exec of the CLI, its exit), which is taken off the session's time.
//
// Reported, as the median over the iterations of each iteration's own
// ratio (robust to the load changing between iterations): overhead-% is
// the session's wall time less the empty run's over the parse time, minus
// one; overhead-all-% counts the fixed cost in; cpu-overhead-% compares the
// CPU time of this process (getrusage: the reader, the loop, the parser,
// the scheduler and the GC, not the child; the empty run's taken off),
// which a loaded machine disturbs far less than the wall clock. start-ms is
// the empty run's median wall time; session-allocs/op and session-B/op are
// what the session allocates beyond the parse (the empty run's taken off);
// parse-gcs/op and session-gcs/op count the collections that ended in
// each (a difference in GC work shows there).
func BenchmarkReadPath(b *testing.B) {
	lines, _ := referenceLines(b, func(l []byte) bool {
		var r struct{ Type string }
		return json.Unmarshal(l, &r) != nil || r.Type != "result"
	})
	var stream bytes.Buffer
	for _, l := range lines {
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
	p := New(nil, Options{Launch: procrun.Launch{HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}})
	req := agent.RunRequest{Prompt: "go", Bin: exe, Approval: agent.ApprovalDeny, Env: map[string]string{envStream: file}}
	startReq := req
	startReq.Env = map[string]string{envStream: empty}
	ctx := procrun.WithIdleTimeout(b.Context(), 30*time.Minute) // the default idle_timeout
	b.SetBytes(int64(stream.Len()))
	b.ReportAllocs()
	var (
		parse, session, start phase
		wall, all, cpu, ms    []float64
		parsed, emitted       int
	)
	for b.Loop() {
		parse.begin(b)
		parsed = 0
		parser := NewParser("")
		parser.AutoDecision = agent.DecisionDecline
		for _, l := range lines {
			evs, _ := parser.Parse(l)
			parsed += len(evs)
			parser.TakeOutgoing()
		}
		parse.end(b)

		session.begin(b)
		emitted = 0
		err := p.Run(ctx, req, func(agent.Event) { emitted++ })
		session.end(b)
		if !errors.Is(err, agent.ErrRunFailed) { // the stream has no result line
			b.Fatalf("run: %v", err)
		}

		start.begin(b)
		err = p.Run(ctx, startReq, func(agent.Event) {})
		start.end(b)
		if !errors.Is(err, agent.ErrRunFailed) {
			b.Fatalf("empty run: %v", err)
		}
		wall = append(wall, 100*((session.wall-start.wall).Seconds()/parse.wall.Seconds()-1))
		all = append(all, 100*(session.wall.Seconds()/parse.wall.Seconds()-1))
		cpu = append(cpu, 100*((session.cpu-start.cpu).Seconds()/parse.cpu.Seconds()-1))
		ms = append(ms, float64(start.wall.Microseconds())/1e3)
	}
	// The session adds one event: run.failed, as the stream has no result.
	if emitted != parsed+1 {
		b.Fatalf("session emitted %d events, the parser %d (+1 for the end)", emitted, parsed)
	}
	mb := float64(stream.Len()) * float64(b.N) / 1e6
	b.ReportMetric(mb/parse.wallSum.Seconds(), "parse-MB/s")
	b.ReportMetric(mb/session.wallSum.Seconds(), "session-MB/s")
	b.ReportMetric(median(wall), "overhead-%")
	b.ReportMetric(median(all), "overhead-all-%")
	b.ReportMetric(median(cpu), "cpu-overhead-%")
	b.ReportMetric(median(ms), "start-ms")
	b.ReportMetric(float64(emitted), "events/op")
	n := float64(b.N)
	b.ReportMetric((float64(session.mallocs)-float64(start.mallocs)-float64(parse.mallocs))/n, "session-allocs/op")
	b.ReportMetric((float64(session.bytes)-float64(start.bytes)-float64(parse.bytes))/n, "session-B/op")
	b.ReportMetric(float64(parse.gcs)/n, "parse-gcs/op")
	b.ReportMetric(float64(session.gcs)/n, "session-gcs/op")
}

// phase is one side of BenchmarkReadPath's iteration: the wall and CPU
// time of its last run, and the sums of its wall time and allocations.
type phase struct {
	t0          time.Time
	wall        time.Duration
	c0, cpu     time.Duration
	wallSum     time.Duration
	m0, mallocs uint64
	b0, bytes   uint64
	g0, gcs     uint32
	ms          runtime.MemStats
}

func (p *phase) begin(b *testing.B) {
	runtime.ReadMemStats(&p.ms)
	p.m0, p.b0, p.g0 = p.ms.Mallocs, p.ms.TotalAlloc, p.ms.NumGC
	p.c0 = cpuTime(b)
	p.t0 = time.Now()
}

func (p *phase) end(b *testing.B) {
	p.wall = time.Since(p.t0)
	p.cpu = cpuTime(b) - p.c0
	p.wallSum += p.wall
	runtime.ReadMemStats(&p.ms)
	p.mallocs += p.ms.Mallocs - p.m0
	p.bytes += p.ms.TotalAlloc - p.b0
	p.gcs += p.ms.NumGC - p.g0
}

// median is the middle value of v (the mean of the two middle ones).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// cpuTime is the CPU time (user and system) this process used so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
