// Golden tests: the server→client lines of real codex-cli 0.169.0 transcripts
// (testdata/<scenario>.jsonl, copied from the reference captures) → the
// normalized events the harness derives from them (testdata/<scenario>.events.jsonl).

package codexharness

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// serverLines returns the s2c messages of a transcript, compacted the way the
// app-server writes them (one line each).
func serverLines(t testing.TB, path string) [][]byte {
	t.Helper()
	var out [][]byte
	for _, msg := range providertest.Messages(t, path, "s2c") {
		var buf bytes.Buffer
		if err := json.Compact(&buf, msg); err != nil {
			t.Fatal(err)
		}
		out = append(out, buf.Bytes())
	}
	return out
}

// transcripts lists the reference transcripts under testdata.
func transcripts(t testing.TB) []string {
	t.Helper()
	return providertest.Inputs(t, "testdata/*.jsonl")
}

// replay feeds server lines through the same pieces the run loop uses:
// decodeLine, the Parser, the interactions (asking the chat: no policy) and the
// thread/turn results. Each event, parse error and response error is one
// JSON line.
func replay(t testing.TB, lines [][]byte) []byte {
	t.Helper()
	r := providertest.NewRecorder(t)
	p := NewParser("testprov")
	in := newInteractions("testprov", "Test")
	for _, l := range lines {
		m, params, err := decodeLine(l)
		if err != nil {
			r.Error("decode_error", err)
			continue
		}
		var evs []agent.Event
		switch m.Kind {
		case jsonrpc.KindResponse:
			if m.Error != nil {
				r.Put(map[string]any{"response_error": m.Error.Message, "id": m.ID, "session_not_found": IsSessionNotFound(m.Error.Message)})
				continue
			}
			var th threadResult
			if json.Unmarshal(m.Result, &th) == nil && th.Thread.ID != "" && p.ThreadID() == "" {
				p.SetThread(th.Thread.ID, th.Model)
				evs = append(evs, agent.Event{Type: agent.EventSessionUpdated, SessionID: th.Thread.ID, Model: th.Model})
			}
			var tr turnResult
			if json.Unmarshal(m.Result, &tr) == nil && tr.Turn.ID != "" && p.TurnID() == "" {
				p.SetTurn(tr.Turn.ID)
			}
		case jsonrpc.KindRequest:
			out, err := in.request(&m, l, p, "")
			r.Error("request_error", err)
			evs = out.events
		case jsonrpc.KindNotification:
			if m.Method == "serverRequest/resolved" {
				var v resolvedParams
				_ = params.decode(m.Method, &v)
				// The chat answered: the golden shows the request closing.
				evs = in.resolvedByServer(v.RequestID)
				break
			}
			var err error
			evs, err = p.parse(m.Method, params, l)
			r.Error("parse_error", err)
			for _, ev := range evs {
				if ev.Type.Terminal() {
					evs = append(in.endAll(), evs...)
					break
				}
			}
		}
		r.Events(evs)
	}
	return r.Bytes()
}

func TestGolden(t *testing.T) {
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return replay(t, serverLines(t, in))
	})
}

// The goldens pin the mapping; these spot checks say what must hold in them.
func TestGoldenFacts(t *testing.T) {
	events := func(name string) []agent.Event {
		var out []agent.Event
		for _, l := range bytes.Split(bytes.TrimSpace(replay(t, serverLines(t, "testdata/"+name))), []byte("\n")) {
			var ev agent.Event
			if err := json.Unmarshal(l, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.Type != "" {
				out = append(out, ev)
			}
		}
		return out
	}
	text := func(evs []agent.Event, typ agent.EventType) string {
		var b strings.Builder
		for _, ev := range evs {
			if ev.Type == typ {
				b.WriteString(ev.Text)
			}
		}
		return b.String()
	}
	last := func(evs []agent.Event) agent.Event { return evs[len(evs)-1] }

	t.Run("text", func(t *testing.T) {
		evs := events("text.jsonl")
		if got := text(evs, agent.EventAssistantDelta); got != "Hello from the fake model. This is plain text." {
			t.Errorf("text %q", got)
		}
		if l := last(evs); l.Type != agent.EventRunCompleted || l.Text != "Hello from the fake model. This is plain text." {
			t.Errorf("last %+v", l)
		}
	})
	t.Run("sse-minimal completes text from the snapshot", func(t *testing.T) {
		evs := events("sse-minimal.jsonl")
		if got := text(evs, agent.EventAssistantDelta); got == "" || got != last(evs).Text {
			t.Errorf("text %q, final %q", got, last(evs).Text)
		}
	})
	t.Run("approve", func(t *testing.T) {
		evs := events("approve.jsonl")
		var req *agent.Interaction
		var started, completed int
		for _, ev := range evs {
			switch ev.Type {
			case agent.EventInteractionRequested:
				req = ev.Interaction
			case agent.EventToolStarted:
				started++
			case agent.EventToolCompleted:
				completed++
				if !strings.Contains(ev.Tool.Output, "hello-from-codex") || ev.Tool.IsError {
					t.Errorf("tool.completed %+v", ev.Tool)
				}
			}
		}
		if req == nil || req.Kind != agent.KindCommandApproval || string(req.NativeID) != "0" || req.ID != "rpc-0" ||
			req.Command != "/bin/bash -lc 'echo hello-from-codex > out.txt; cat out.txt'" || req.Cwd != "<CWD_ROOT>/approve" {
			t.Errorf("interaction %+v", req)
		}
		if started != 1 || completed != 1 {
			t.Errorf("tool started %d, completed %d", started, completed)
		}
		var usage *agent.Usage
		for _, ev := range evs {
			if ev.Type == agent.EventUsageUpdated {
				usage = ev.Usage
			}
		}
		if usage == nil || usage.InputTokens != 240 || usage.OutputTokens != 24 || usage.CacheReadTokens != 40 || usage.NumTurns != 2 {
			t.Errorf("usage %+v", usage)
		}
	})
	t.Run("patch-approve diff comes from item/started", func(t *testing.T) {
		for _, ev := range events("patch-approve.jsonl") {
			if ev.Type == agent.EventInteractionRequested {
				if ev.Interaction.Kind != agent.KindFileChangeApproval || !strings.Contains(ev.Interaction.Diff, "+++ <CWD_ROOT>/patch-approve/hello.txt (new file)\nhello from apply_patch\n") {
					t.Errorf("interaction %+v", ev.Interaction)
				}
				return
			}
		}
		t.Error("no interaction")
	})
	t.Run("ask", func(t *testing.T) {
		for _, ev := range events("ask.jsonl") {
			if ev.Type == agent.EventInteractionRequested {
				q := ev.Interaction.Questions
				if ev.Interaction.Kind != agent.KindQuestion || len(q) != 1 || q[0].ID != "color" || q[0].Text != "Which color?" || len(q[0].Options) != 2 || !q[0].AllowOther {
					t.Errorf("interaction %+v", ev.Interaction)
				}
				return
			}
		}
		t.Error("no interaction")
	})
	t.Run("mcp-elicitation", func(t *testing.T) {
		var kinds []string
		for _, ev := range events("mcp-elicitation.jsonl") {
			if ev.Type == agent.EventInteractionRequested {
				kinds = append(kinds, string(ev.Interaction.Kind)+":"+ev.Interaction.Options[0].ID+":"+string(ev.Interaction.NativeID))
			}
		}
		// The MCP tool approval is an elicitation with approval buttons; the
		// server's own form is a question, one field per schema property.
		if strings.Join(kinds, " ") != "elicitation:approve:0 question:answer:1" {
			t.Errorf("interactions %v", kinds)
		}
	})
	t.Run("error", func(t *testing.T) {
		l := last(events("error.jsonl"))
		if l.Type != agent.EventRunFailed || l.Text != "fake server: scripted bad request" {
			t.Errorf("last %+v", l)
		}
	})
	t.Run("error500 retries are system events", func(t *testing.T) {
		evs := events("error500.jsonl")
		n := 0
		for _, ev := range evs {
			if ev.Type == agent.EventSystem && ev.Subtype == "retrying" {
				n++
			}
		}
		if n != 5 || last(evs).Type != agent.EventRunFailed {
			t.Errorf("%d retrying events, last %+v", n, last(evs))
		}
	})
	t.Run("interrupt-approval ends pending as turn_ended", func(t *testing.T) {
		evs := events("interrupt-approval.jsonl")
		if l := last(evs); l.Type != agent.EventRunInterrupted {
			t.Fatalf("last %+v", l)
		}
		prev := evs[len(evs)-2]
		if prev.Type != agent.EventInteractionResolved || prev.Resolution.Status != agent.StatusTurnEnded {
			t.Errorf("before the terminal: %+v", prev)
		}
	})
	t.Run("resume ignores the restored usage", func(t *testing.T) {
		for _, ev := range events("resume.jsonl") {
			if ev.Type == agent.EventUsageUpdated && ev.Usage.InputTokens != 120 {
				t.Errorf("usage %+v", ev.Usage)
			}
		}
	})
}

// BenchmarkParse measures the hot path of a run: Decode plus the notification
// parser over every server line of the reference transcripts.
func BenchmarkParse(b *testing.B) {
	var lines [][]byte
	for _, path := range transcripts(b) {
		lines = append(lines, serverLines(b, path)...)
	}
	providertest.BenchLines(b, lines, func() {
		p := NewParser("bench")
		for _, l := range lines {
			m, err := jsonrpc.Decode(l)
			if err != nil {
				b.Fatal(err)
			}
			if m.Kind == jsonrpc.KindNotification {
				if _, err := p.Parse(m.Method, m.Params, l); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkParseDeltas measures the streaming case alone: agent message deltas.
func BenchmarkParseDeltas(b *testing.B) {
	var lines [][]byte
	for _, l := range serverLines(b, "testdata/approve.jsonl") {
		if bytes.Contains(l, []byte(`"item/agentMessage/delta"`)) {
			lines = append(lines, l)
		}
	}
	providertest.BenchLines(b, lines, func() {
		p := NewParser("bench")
		for _, l := range lines {
			m, _ := jsonrpc.Decode(l)
			if _, err := p.Parse(m.Method, m.Params, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
