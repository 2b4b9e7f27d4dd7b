// Golden-transcript tests: a provider's captured transcripts
// (testdata/<name>.jsonl) rendered to normalized events, one JSON line each,
// and compared with the committed testdata/<name>.events.jsonl.

package providertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// update is the -update flag of every test binary that imports this package.
var update = flag.Bool("update", false, "rewrite the golden files (testdata/*.events.jsonl) from the current output")

// GoldenSuffix ends the name of a golden file; inputs never end with it.
const GoldenSuffix = ".events.jsonl"

// Golden runs one subtest per input that pattern matches (its golden files
// excepted): render turns the input's path into the JSON lines to compare
// with its golden file (GoldenPath), or to write there under -update.
func Golden(t *testing.T, pattern string, render func(t *testing.T, input string) []byte) {
	t.Helper()
	for _, in := range Inputs(t, pattern) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			CompareGolden(t, GoldenPath(in), render(t, in))
		})
	}
}

// Inputs lists the files pattern matches, golden files excepted, and fails t
// when there are none.
func Inputs(t testing.TB, pattern string) []string {
	t.Helper()
	all, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, GoldenSuffix) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no transcripts match %s", pattern)
	}
	return out
}

// GoldenPath names the golden file of an input: <name>[.<kind>].jsonl (kind
// such as "drive" says how it was captured) → <name>.events.jsonl.
func GoldenPath(input string) string {
	base := strings.TrimSuffix(input, ".jsonl")
	return strings.TrimSuffix(base, filepath.Ext(base)) + GoldenSuffix
}

// CompareGolden compares got with the golden file, or rewrites it under -update.
func CompareGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the parser output; run go test -update and review the diff:\n%s", golden, firstDiff(got, want))
	}
}

func firstDiff(got, want []byte) string {
	g, w := bufio.NewScanner(bytes.NewReader(got)), bufio.NewScanner(bytes.NewReader(want))
	g.Buffer(nil, 1<<20)
	w.Buffer(nil, 1<<20)
	for n := 1; ; n++ {
		gok, wok := g.Scan(), w.Scan()
		if !gok && !wok {
			return "(no line differs)"
		}
		if g.Text() != w.Text() || gok != wok {
			return "line " + strconv.Itoa(n) + ":\n got: " + g.Text() + "\nwant: " + w.Text()
		}
	}
}

// Lines returns the non-blank lines of a file.
func Lines(t testing.TB, path string) [][]byte {
	t.Helper()
	out, err := FileLines(path)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// FileLines returns the lines of the file at path that are not blank, for
// a fake CLI replaying a transcript (Lines is the test's version).
func FileLines(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			out = append(out, l)
		}
	}
	return out, nil
}

// TranscriptLine is one line of a captured transcript: a message and its
// direction, at T seconds.
type TranscriptLine struct {
	T   float64         `json:"t"`
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// ReadTranscript parses every line of a captured transcript.
func ReadTranscript(t testing.TB, path string) []TranscriptLine {
	t.Helper()
	var out []TranscriptLine
	for _, l := range Lines(t, path) {
		var tl TranscriptLine
		if err := json.Unmarshal(l, &tl); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, tl)
	}
	return out
}

// Messages returns the messages of a transcript going in direction dir.
func Messages(t testing.TB, path, dir string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, l := range ReadTranscript(t, path) {
		if l.Dir == dir {
			out = append(out, l.Msg)
		}
	}
	return out
}

// Recorder renders what a parser makes of a transcript: one JSON line per value.
type Recorder struct {
	t   testing.TB
	buf bytes.Buffer
}

// NewRecorder returns an empty Recorder failing t when a value does not marshal.
func NewRecorder(t testing.TB) *Recorder { return &Recorder{t: t} }

// Put writes v as one JSON line.
func (r *Recorder) Put(v any) {
	r.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		r.t.Fatal(err)
	}
	r.buf.Write(append(b, '\n'))
}

// Error writes {key: err} when err is not nil.
func (r *Recorder) Error(key string, err error) {
	r.t.Helper()
	if err != nil {
		r.Put(map[string]string{key: err.Error()})
	}
}

// Events writes each event.
func (r *Recorder) Events(evs []agent.Event) {
	r.t.Helper()
	for _, ev := range evs {
		r.Put(ev)
	}
}

// Parsed writes the result of a Parse call: its parse_error, then its events.
func (r *Recorder) Parsed(evs []agent.Event, err error) {
	r.t.Helper()
	r.Error("parse_error", err)
	r.Events(evs)
}

// Stdin writes {"stdin": line} for each line the parser wants written to the
// agent, and returns them.
func (r *Recorder) Stdin(lines [][]byte) [][]byte {
	r.t.Helper()
	for _, o := range lines {
		r.Put(map[string]json.RawMessage{"stdin": o})
	}
	return lines
}

// Bytes returns what was written.
func (r *Recorder) Bytes() []byte { return r.buf.Bytes() }

// BenchLines sets b up for parsing lines (their size, a newline each, as the
// bytes of an iteration; allocations reported) and calls parse once per iteration.
func BenchLines(b *testing.B, lines [][]byte, parse func()) {
	b.Helper()
	var size int64
	for _, l := range lines {
		size += int64(len(l)) + 1
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		parse()
	}
}

// FuzzLimits are the bounds a parser keeps whatever line it is given: the
// size of a provider.native payload and of a tool's output (before the
// ellipsis that marks a cut). A zero bound is not checked.
type FuzzLimits struct {
	NativePayload, ToolOutput int
}

// CheckFuzzEvents checks what a parser's fuzz target got from one line:
// every event has a type and marshals, payloads and tool output stay within
// lim, and each interaction has a JSON native id and, when respond is not
// nil, can be answered (approved) through it.
func CheckFuzzEvents(t testing.TB, evs []agent.Event, lim FuzzLimits, respond func(agent.InteractionResponse) error) {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == "" {
			t.Fatalf("event without type: %+v", ev)
		}
		if _, err := json.Marshal(ev); err != nil {
			t.Fatalf("event does not marshal: %v", err)
		}
		if ev.Native != nil && lim.NativePayload > 0 && len(ev.Native.Payload) > lim.NativePayload {
			t.Fatalf("payload of %d bytes", len(ev.Native.Payload))
		}
		if ev.Tool != nil && lim.ToolOutput > 0 && len(ev.Tool.Output) > lim.ToolOutput+len("…") {
			t.Fatalf("tool output of %d bytes", len(ev.Tool.Output))
		}
		if in := ev.Interaction; in != nil && respond != nil {
			if !json.Valid(in.NativeID) {
				t.Fatalf("native id %q", in.NativeID)
			}
			if err := respond(agent.InteractionResponse{InteractionID: in.ID, Decision: agent.DecisionApprove}); err != nil {
				t.Fatalf("Respond: %v", err)
			}
		}
	}
}
