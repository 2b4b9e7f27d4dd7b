// Golden tests: real Claude Code 2.1.328 transcripts → normalized events.

package claude

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.events.jsonl from the parser's output")

// driveRecord is one line of a drive.py transcript.
type driveRecord struct {
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

// transcriptInputs lists the transcripts under testdata: raw print-mode
// stdout (*.jsonl) and drive.py captures (*.drive.jsonl).
func transcriptInputs(t testing.TB) []string {
	t.Helper()
	all, err := filepath.Glob("testdata/*.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range all {
		if !strings.HasSuffix(f, ".events.jsonl") {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		t.Fatal("no transcripts in testdata")
	}
	return out
}

// stdoutLines returns the CLI's stdout lines of a transcript.
func stdoutLines(t testing.TB, path string) [][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		if strings.HasSuffix(path, ".drive.jsonl") {
			var r driveRecord
			if err := json.Unmarshal(l, &r); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			if r.Dir == "cli->host" {
				out = append(out, r.Msg)
			}
			continue
		}
		out = append(out, l)
	}
	return out
}

func goldenName(path string) string {
	base := strings.TrimSuffix(strings.TrimSuffix(path, ".jsonl"), ".drive")
	return base + ".events.jsonl"
}

// render parses lines with a fresh parser and renders one JSON line per
// event, parse error or stdin line the parser asked for.
func render(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := NewParser("")
	for _, l := range lines {
		evs, err := p.Parse(l)
		if err != nil {
			b, _ := json.Marshal(map[string]string{"parse_error": err.Error()})
			buf.Write(append(b, '\n'))
		}
		for _, ev := range evs {
			b, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
		for _, o := range p.TakeOutgoing() {
			b, _ := json.Marshal(map[string]json.RawMessage{"stdin": o})
			buf.Write(append(b, '\n'))
		}
	}
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	for _, in := range transcriptInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := render(t, stdoutLines(t, in))
			golden := goldenName(in)
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
		})
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
			return "line " + itoa(n) + ":\n got: " + g.Text() + "\nwant: " + w.Text()
		}
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"bigout.jsonl", "basic.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := stdoutLines(b, filepath.Join("testdata", name))
			var size int64
			for _, l := range lines {
				size += int64(len(l)) + 1
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				p := NewParser("")
				for _, l := range lines {
					if _, err := p.Parse(l); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
