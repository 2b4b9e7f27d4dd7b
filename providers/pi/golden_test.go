// Golden tests: real pi 0.73.1 transcripts → normalized events.

package pi

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

var update = flag.Bool("update", false, "rewrite testdata/*.events.jsonl from the parser's output")

type transcriptLine struct {
	T   float64         `json:"t"`
	Dir string          `json:"dir"`
	Msg json.RawMessage `json:"msg"`
}

func transcripts(t testing.TB) []string {
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

func readTranscript(t testing.TB, path string) []transcriptLine {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []transcriptLine
	for _, l := range bytes.Split(data, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 {
			continue
		}
		var tl transcriptLine
		if err := json.Unmarshal(l, &tl); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, tl)
	}
	return out
}

// render replays a transcript through a fresh parser: the driver's prompt
// starts a turn (when none is running), its abort sets Interrupting, every
// pi line is parsed, and a failed agent_end that no auto_retry_start follows
// within DefaultRetryGrace on the captured timeline is settled.
func render(t testing.TB, lines []transcriptLine) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := NewParser("")
	write := func(v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(b, '\n'))
	}
	events := func(evs []agent.Event) {
		for _, ev := range evs {
			write(ev)
		}
		for _, o := range p.TakeOutgoing() {
			write(map[string]json.RawMessage{"stdin": o})
		}
	}
	pendingSince := -1.0
	for _, l := range lines {
		switch l.Dir {
		case "send":
			var cmd struct {
				Type string `json:"type"`
				ID   string `json:"id"`
			}
			_ = json.Unmarshal(l.Msg, &cmd)
			switch {
			case cmd.Type == "prompt" && !p.Active():
				p.StartTurn(cmd.ID)
			case cmd.Type == "abort":
				p.Interrupting = true
			}
		case "recv":
			if p.PendingFailure() && l.T-pendingSince > DefaultRetryGrace.Seconds() {
				events(p.Settle())
			}
			evs, err := p.Parse(l.Msg)
			if err != nil {
				write(map[string]string{"parse_error": err.Error()})
			}
			events(evs)
			if p.PendingFailure() && pendingSince < 0 {
				pendingSince = l.T
			} else if !p.PendingFailure() {
				pendingSince = -1
			}
		}
	}
	events(p.Settle())
	return buf.Bytes()
}

func TestGolden(t *testing.T) {
	for _, in := range transcripts(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := render(t, readTranscript(t, in))
			golden := strings.TrimSuffix(in, ".jsonl") + ".events.jsonl"
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
			b, _ := json.Marshal(n)
			return "line " + string(b) + ":\n got: " + g.Text() + "\nwant: " + w.Text()
		}
	}
}

func recvLines(t testing.TB, path string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, l := range readTranscript(t, path) {
		if l.Dir == "recv" {
			out = append(out, l.Msg)
		}
	}
	return out
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"pi-basic.jsonl", "pi-write.jsonl", "pi-http500.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := recvLines(b, filepath.Join("testdata", name))
			var size int64
			for _, l := range lines {
				size += int64(len(l)) + 1
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				p := NewParser("")
				p.StartTurn("req-1")
				for _, l := range lines {
					if _, err := p.Parse(l); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
