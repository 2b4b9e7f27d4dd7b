// Golden tests: real opencode, qwen and gemini transcripts → normalized events.

package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

var update = flag.Bool("update", false, "rewrite testdata/*.events.jsonl from the parser's output")

// transcriptLine is one line of a captured transcript.
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

// definitionFor picks the definition by the transcript's name prefix.
func definitionFor(t testing.TB, path string) Definition {
	t.Helper()
	id, _, _ := strings.Cut(filepath.Base(path), "-")
	d, ok := Lookup(agent.ProviderID(id))
	if !ok {
		t.Fatalf("no definition for %s", path)
	}
	return d
}

// memFS accepts every fs call in memory.
type memFS struct {
	mu    sync.Mutex
	files map[string]string
}

func (m *memFS) ReadTextFile(path string, _, _ int) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.files[path]
	if !ok {
		return "", os.ErrNotExist
	}
	return s, nil
}

func (m *memFS) WriteTextFile(path, content string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]string{}
	}
	m.files[path] = content
	return nil
}

// replayGap is how the golden harness emulates Definition.LoadQuiet on the
// captured timeline: the driver sent its prompt right after the load answer,
// so a gap of this many seconds between agent lines ends the replay.
const replayGap = 0.010

// render replays a transcript through a fresh parser: the client's requests
// are tracked, its permission answers and session/cancel are applied with
// Respond and Cancel, and every agent line is parsed. It renders one JSON
// line per event, parse error and line the parser wants written.
func render(t testing.TB, def Definition, lines []transcriptLine) []byte {
	t.Helper()
	var buf bytes.Buffer
	p := NewParser(ParserOptions{
		Provider: def.ID, EmitSession: def.Resume, HoldReplay: def.LoadQuiet > 0,
		SessionNotFound: def.SessionNotFound, FS: &memFS{},
	})
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
	}
	outgoing := func() [][]byte {
		out := p.TakeOutgoing()
		for _, o := range out {
			write(map[string]json.RawMessage{"stdin": o})
		}
		return out
	}
	lastRecv, loadAnswered := -1.0, false
	for _, l := range lines {
		switch l.Dir {
		case "send":
			var m rpcMessage
			if err := json.Unmarshal(l.Msg, &m); err != nil {
				t.Fatal(err)
			}
			switch {
			case m.Method == "session/cancel":
				events(p.Cancel())
				outgoing()
			case m.Method != "" && m.hasID():
				p.Track(m.ID, m.Method)
			case m.Method == "" && m.hasID():
				key := string(compact(m.ID))
				if !p.Pending(key) {
					continue // answered by the parser already (policy, cancel, -32601)
				}
				var res permissionOutcome
				if err := json.Unmarshal(m.Result, &res); err != nil || res.Outcome.Outcome != "selected" {
					t.Fatalf("driver answer %s: %v", l.Msg, err)
				}
				ev, err := p.Respond(agent.InteractionResponse{InteractionID: key, OptionID: res.Outcome.OptionID, By: "driver"})
				if err != nil {
					t.Fatal(err)
				}
				events([]agent.Event{ev})
				out := outgoing()
				if len(out) != 1 || !jsonEqual(out[0], l.Msg) {
					t.Errorf("answer to %s = %s, the driver sent %s", key, out, l.Msg)
				}
			}
		case "recv":
			if p.Replaying() && loadAnswered && l.T-lastRecv >= replayGap {
				events(p.EndReplay())
			}
			lastRecv = l.T
			parsed, err := p.Parse(l.Msg)
			if err != nil {
				write(map[string]string{"parse_error": err.Error()})
			}
			events(parsed.Events)
			if parsed.Reply != nil && parsed.Reply.Method == "session/load" {
				loadAnswered = true
			}
			outgoing()
		}
	}
	return buf.Bytes()
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestGolden(t *testing.T) {
	for _, in := range transcripts(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			got := render(t, definitionFor(t, in), readTranscript(t, in))
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

// recvLines returns the agent's lines of a transcript.
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
	for _, name := range []string{"opencode-basic.jsonl", "qwen-perm-allow.jsonl", "qwen-trial-basic.jsonl", "gemini-perm-allow.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := recvLines(b, filepath.Join("testdata", name))
			var size int64
			for _, l := range lines {
				size += int64(len(l)) + 1
			}
			b.SetBytes(size)
			b.ReportAllocs()
			for b.Loop() {
				p := NewParser(ParserOptions{Provider: "bench"})
				for _, m := range []string{"initialize", "session/new", "session/prompt"} {
					p.Request(m, nil)
				}
				for _, l := range lines {
					_, _ = p.Parse(l)
				}
			}
		})
	}
}
