// Golden tests: real opencode, qwen and gemini transcripts → normalized events.

package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// definitionFor picks the definition by the transcript's name prefix.
func definitionFor(t testing.TB, path string) Definition {
	t.Helper()
	id, _, _ := strings.Cut(filepath.Base(path), "-")
	d, ok := lookup(agent.ProviderID(id))
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

// clientMessage is what a message the client sent is to a replay (render,
// the reference stream): its session/cancel, a request whose answer the
// parser routes by id (method set), or its answer to a request of the
// agent's (method empty).
type clientMessage struct {
	cancel bool
	id     json.RawMessage
	method string
	result json.RawMessage
}

// sentMessage reads a message the client sent; ok is false for one a
// replay has nothing to do with (a notification other than the cancel).
func sentMessage(t testing.TB, msg json.RawMessage) (m clientMessage, ok bool) {
	t.Helper()
	var rm rpcMessage
	if err := json.Unmarshal(msg, &rm); err != nil {
		t.Fatal(err)
	}
	switch {
	case rm.Method == "session/cancel":
		return clientMessage{cancel: true}, true
	case jsonrpc.HasID(rm.ID):
		return clientMessage{id: rm.ID, method: rm.Method, result: rm.Result}, true
	}
	return clientMessage{}, false
}

// render replays a transcript through a fresh parser: the client's requests
// are tracked, its permission answers and session/cancel are applied with
// Respond and Cancel, and every agent line is parsed. It renders one JSON
// line per event, parse error and line the parser wants written.
func render(t testing.TB, def Definition, lines []providertest.TranscriptLine) []byte {
	t.Helper()
	r := providertest.NewRecorder(t)
	p := NewParser(ParserOptions{
		Provider: def.ID, EmitSession: def.Resume, HoldReplay: def.LoadQuiet > 0,
		SessionNotFound: def.SessionNotFound, FS: &memFS{},
	})
	outgoing := func() [][]byte { return r.Stdin(p.TakeOutgoing()) }
	lastRecv, loadAnswered := -1.0, false
	for _, l := range lines {
		switch l.Dir {
		case "send":
			m, ok := sentMessage(t, l.Msg)
			switch {
			case !ok:
			case m.cancel:
				r.Events(p.Cancel())
				outgoing()
			case m.method != "":
				p.Track(m.id, m.method)
			default:
				key := string(agent.CompactJSON(m.id))
				if !p.Pending(key) {
					continue // answered by the parser already (policy, cancel, -32601)
				}
				var res permissionOutcome
				if err := json.Unmarshal(m.result, &res); err != nil || res.Outcome.Outcome != "selected" {
					t.Fatalf("driver answer %s: %v", l.Msg, err)
				}
				ev, err := p.Respond(agent.InteractionResponse{InteractionID: key, OptionID: res.Outcome.OptionID, By: "driver"})
				if err != nil {
					t.Fatal(err)
				}
				r.Events([]agent.Event{ev})
				out := outgoing()
				if len(out) != 1 || !jsonEqual(out[0], l.Msg) {
					t.Errorf("answer to %s = %s, the driver sent %s", key, out, l.Msg)
				}
			}
		case "recv":
			if p.Replaying() && loadAnswered && l.T-lastRecv >= replayGap {
				r.Events(p.EndReplay())
			}
			lastRecv = l.T
			parsed, err := p.Parse(l.Msg)
			r.Error("parse_error", err)
			r.Events(parsed.Events)
			if parsed.Reply != nil && parsed.Reply.Method == "session/load" {
				loadAnswered = true
			}
			outgoing()
		}
	}
	return r.Bytes()
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

func TestGolden(t *testing.T) {
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return render(t, definitionFor(t, in), providertest.ReadTranscript(t, in))
	})
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"opencode-basic.jsonl", "qwen-perm-allow.jsonl", "qwen-trial-basic.jsonl", "gemini-perm-allow.jsonl"} {
		b.Run(name, func(b *testing.B) {
			lines := providertest.Messages(b, filepath.Join("testdata", name), "recv")
			providertest.BenchLines(b, lines, func() {
				p := NewParser(ParserOptions{Provider: "bench"})
				for _, m := range []string{"initialize", "session/new", "session/prompt"} {
					p.Request(m, nil)
				}
				for _, l := range lines {
					_, _ = p.Parse(l)
				}
			})
		})
	}
}
