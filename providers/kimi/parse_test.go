// Parser tests: golden transcripts (documented format), units, fuzz, benchmark.

package kimi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// render parses lines with a fresh parser: one JSON line per event or parse error.
func render(t testing.TB, ls [][]byte) []byte {
	t.Helper()
	return providertest.RenderLines(t, NewParser(""), ls, nil).Bytes()
}

func TestGolden(t *testing.T) {
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return render(t, providertest.Lines(t, in))
	})
}

func TestParseToolsTranscript(t *testing.T) {
	p := NewParser("")
	var evs []agent.Event
	for _, l := range providertest.Lines(t, "testdata/tools.jsonl") {
		e, err := p.Parse(l)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, e...)
	}
	want := []agent.EventType{
		agent.EventProviderNative, // meta/system.version
		agent.EventReasoningDelta, agent.EventAssistantDelta, agent.EventToolStarted,
		agent.EventToolCompleted,
		agent.EventToolStarted, agent.EventToolStarted,
		agent.EventToolCompleted, agent.EventToolCompleted,
		agent.EventAssistantDelta,
		agent.EventSessionUpdated, agent.EventRunCompleted,
	}
	if got := providertest.Types(evs); !slices.Equal(got, want) {
		t.Fatalf("types = %v\nwant %v", got, want)
	}
	if evs[3].Tool.Summary != "Shell: ls" || string(evs[3].Tool.Input) != `{"command":"ls"}` {
		t.Errorf("tool.started = %+v", evs[3].Tool)
	}
	if evs[7].Tool.Name != "ReadFile" || !strings.HasPrefix(evs[7].Tool.Output, "from file1 import add") {
		t.Errorf("tool.completed from text parts = %+v", evs[7].Tool)
	}
	if !strings.HasPrefix(evs[9].Text, "\n\nThere are two") {
		t.Errorf("second message not separated: %q", evs[9].Text)
	}
	if evs[10].SessionID != "session_8c1e2d0a" || !p.Done() {
		t.Errorf("session = %+v", evs[10])
	}
}

func TestParseMalformedAndUnknown(t *testing.T) {
	p := NewParser("")
	for _, bad := range []string{"not json", `{"role":`, `[1,2]`, `"str"`} {
		if _, err := p.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	evs := providertest.MustParse(t, p, `{"role":"notification","x":1}`)
	if len(evs) != 1 || evs[0].Type != agent.EventProviderNative || evs[0].Native.Kind != "notification" || string(evs[0].Native.Payload) != `{"role":"notification","x":1}` {
		t.Fatalf("unknown role = %+v", evs)
	}
	evs = providertest.MustParse(t, p, `{"x":1}`)
	if len(evs) != 1 || evs[0].Native.Kind != "unknown" {
		t.Fatalf("no role = %+v", evs)
	}
	big := `{"role":"plan","pad":"` + strings.Repeat("x", MaxNativePayload) + `"}`
	evs = providertest.MustParse(t, p, big)
	if !strings.Contains(string(evs[0].Native.Payload), `"truncated":true`) {
		t.Fatalf("payload not bounded: %.100s", evs[0].Native.Payload)
	}
	if evs := providertest.MustParse(t, p, `{"role":"user","content":"echo"}`); len(evs) != 0 {
		t.Errorf("user echo emitted %+v", evs)
	}
	if evs := providertest.MustParse(t, p, `{"role":"assistant","content":""}`); len(evs) != 0 {
		t.Errorf("empty assistant emitted %+v", evs)
	}
}

func TestParseResumeHint(t *testing.T) {
	// Same session as resumed: completion only.
	p := NewParser("s1")
	evs := providertest.MustParse(t, p, `{"role":"meta","type":"session.resume_hint","session_id":"s1"}`)
	if got := providertest.Types(evs); !slices.Equal(got, []agent.EventType{agent.EventRunCompleted}) {
		t.Fatalf("same session = %v", got)
	}
	// Another session than the one resumed: the user is told.
	p = NewParser("s1")
	evs = providertest.MustParse(t, p, `{"role":"meta","type":"session.resume_hint","session_id":"s2"}`)
	if got := providertest.Types(evs); !slices.Equal(got, []agent.EventType{agent.EventSystem, agent.EventSessionUpdated, agent.EventRunCompleted}) {
		t.Fatalf("other session = %v", got)
	}
	if evs[0].Subtype != SubtypeSessionNotResumed || !strings.Contains(evs[0].Text, "s1") || evs[1].SessionID != "s2" || p.SessionID() != "s2" {
		t.Errorf("events = %+v", evs)
	}
	// Fresh run: a new session, no warning.
	p = NewParser("")
	evs = providertest.MustParse(t, p, `{"role":"meta","type":"session.resume_hint","session_id":"s3"}`)
	if got := providertest.Types(evs); !slices.Equal(got, []agent.EventType{agent.EventSessionUpdated, agent.EventRunCompleted}) {
		t.Fatalf("fresh = %v", got)
	}
	// A hint without an id still completes the run.
	p = NewParser("")
	if got := providertest.Types(providertest.MustParse(t, p, `{"role":"meta","type":"session.resume_hint"}`)); !slices.Equal(got, []agent.EventType{agent.EventRunCompleted}) {
		t.Fatalf("no id = %v", got)
	}
}

func TestParseToolArgumentsAndBounds(t *testing.T) {
	p := NewParser("")
	evs := providertest.MustParse(t, p, `{"role":"assistant","tool_calls":[{"id":"a","function":{"name":"Shell","arguments":{"command":"pwd"}}},{"id":"b","function":{"name":"X","arguments":"not json"}},{"id":"","function":{"name":"Skip"}},{"id":"c","function":{"name":"Y"}}]}`)
	if len(evs) != 3 {
		t.Fatalf("events = %+v", evs)
	}
	if string(evs[0].Tool.Input) != `{"command":"pwd"}` || string(evs[1].Tool.Input) != `"not json"` || evs[2].Tool.Input != nil || evs[2].Tool.Summary != "Y" {
		t.Errorf("inputs = %s | %s | %s", evs[0].Tool.Input, evs[1].Tool.Input, evs[2].Tool.Input)
	}
	out, _ := json.Marshal(map[string]any{"role": "tool", "tool_call_id": "a", "content": strings.Repeat("é", MaxToolOutput)})
	evs = providertest.MustParse(t, p, string(out))
	if o := evs[0].Tool.Output; len(o) > MaxToolOutput+len("…") || !strings.HasSuffix(o, "…") || !json.Valid(mustJSON(t, o)) {
		t.Errorf("output not bounded on a rune boundary: %d bytes", len(o))
	}
	if evs[0].Tool.Name != "Shell" {
		t.Errorf("tool name not correlated: %+v", evs[0].Tool)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func FuzzParse(f *testing.F) {
	for _, in := range providertest.Inputs(f, "testdata/*.jsonl") {
		for _, l := range providertest.Lines(f, in) {
			f.Add(l)
		}
	}
	f.Add([]byte(`{"role":"assistant","content":[{"type":"think"}],"tool_calls":[{"id":"x","function":{"arguments":"\"\\u0000\""}}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser("r")
		evs, err := p.Parse(line)
		if err != nil && len(evs) > 0 {
			t.Fatalf("events with an error: %+v", evs)
		}
		providertest.CheckFuzzEvents(t, evs, providertest.FuzzLimits{NativePayload: MaxNativePayload, ToolOutput: MaxToolOutput}, nil)
	})
}

func BenchmarkParse(b *testing.B) {
	ls := providertest.Lines(b, "testdata/tools.jsonl")
	providertest.BenchLines(b, ls, func() {
		p := NewParser("")
		for _, l := range ls {
			if _, err := p.Parse(l); err != nil {
				b.Fatal(err)
			}
		}
	})
}
