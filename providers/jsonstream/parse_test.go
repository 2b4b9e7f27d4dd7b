// Parser tests: golden fixtures per dialect, units, fuzz, benchmarks.

package jsonstream

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// fixtures maps each input fixture to its dialect (the file name's prefix).
func fixtures(t testing.TB) map[string]Dialect {
	t.Helper()
	out := map[string]Dialect{}
	for _, f := range providertest.Inputs(t, "testdata/*.jsonl") {
		d := dialectOf(f)
		if d == "" {
			t.Fatalf("%s: no dialect prefix", f)
		}
		out[f] = d
	}
	return out
}

func dialectOf(path string) Dialect {
	base := filepath.Base(path)
	var best Dialect
	for _, d := range Dialects {
		if strings.HasPrefix(base, string(d)+"-") && len(d) > len(best) {
			best = d
		}
	}
	return best
}

func newParser(t testing.TB, d Dialect) procrun.LineParser {
	t.Helper()
	p, err := NewParser(d, agent.ProviderID(d), "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func render(t testing.TB, d Dialect, ls [][]byte) []byte {
	t.Helper()
	p := newParser(t, d)
	r := providertest.RenderLines(t, p, ls, nil)
	if f, ok := p.(finisher); ok { // the turn ends with the exit: a clean one here
		r.Events(f.Finish(false))
	}
	return r.Bytes()
}

func TestGolden(t *testing.T) {
	dialects := fixtures(t)
	providertest.Golden(t, "testdata/*.jsonl", func(t *testing.T, in string) []byte {
		return render(t, dialects[in], providertest.Lines(t, in))
	})
}

// parseAll runs every line of a fixture and returns the events.
func parseAll(t *testing.T, d Dialect, path string) []agent.Event {
	t.Helper()
	p := newParser(t, d)
	var evs []agent.Event
	for _, l := range providertest.Lines(t, path) {
		e, _ := p.Parse(l)
		evs = append(evs, e...)
	}
	return evs
}

// checkTexts fails t unless the joined assistant and reasoning deltas of
// evs are answer and reasoning (an echo of the full text repeating the
// deltas shows here).
func checkTexts(t *testing.T, evs []agent.Event, answer, reasoning string) {
	t.Helper()
	if got := text(evs, agent.EventAssistantDelta); got != answer {
		t.Errorf("text = %q, want %q", got, answer)
	}
	if got := text(evs, agent.EventReasoningDelta); got != reasoning {
		t.Errorf("reasoning = %q, want %q", got, reasoning)
	}
}

func text(evs []agent.Event, typ agent.EventType) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == typ {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

// terminal returns the only terminal event, failing on zero or several.
func terminal(t *testing.T, evs []agent.Event) agent.Event {
	t.Helper()
	var found []agent.Event
	for _, e := range evs {
		if e.Type.Terminal() {
			found = append(found, e)
		}
	}
	if len(found) != 1 {
		t.Fatalf("terminal events = %+v", found)
	}
	return found[0]
}

func TestOpenCodeCaptures(t *testing.T) {
	evs := parseAll(t, OpenCode, "testdata/opencode-text.jsonl")
	if got := providertest.Types(evs); !slices.Equal(got, []agent.EventType{agent.EventSessionUpdated, agent.EventAssistantDelta, agent.EventUsageUpdated, agent.EventRunCompleted}) {
		t.Fatalf("text = %v", got)
	}
	if evs[1].Text != "Hello from the fake model.\n\nSecond paragraph." || evs[0].SessionID != "ses_01" || evs[2].Usage.InputTokens != 7678 {
		t.Errorf("text events = %+v", evs)
	}

	evs = parseAll(t, OpenCode, "testdata/opencode-tool.jsonl")
	if text(evs, agent.EventAssistantDelta) != "Calling bash.\n\nDone. Tool result: hi from the tool" {
		t.Errorf("tool text = %q", text(evs, agent.EventAssistantDelta))
	}
	var started, completed *agent.Tool
	for _, e := range evs {
		switch e.Type {
		case agent.EventToolStarted:
			started = e.Tool
		case agent.EventToolCompleted:
			completed = e.Tool
		}
	}
	if started == nil || completed == nil || started.ID != "call_01" || started.Summary != "bash: echo hi from the tool" ||
		completed.Output != "hi from the tool\n" || completed.IsError {
		t.Fatalf("tool = %+v / %+v", started, completed)
	}
	if u := evs[len(evs)-2].Usage; u == nil || u.InputTokens != 7677+7741 || u.OutputTokens != 11 {
		t.Errorf("usage not cumulative: %+v", u)
	}
	if terminal(t, evs).Type != agent.EventRunCompleted {
		t.Error("tool run did not complete")
	}

	evs = parseAll(t, OpenCode, "testdata/opencode-tool-error.jsonl")
	for _, e := range evs {
		if e.Type == agent.EventToolCompleted && !e.Tool.IsError {
			t.Errorf("exit 2 is not an error: %+v", e.Tool)
		}
	}

	evs = parseAll(t, OpenCode, "testdata/opencode-reasoning.jsonl")
	if text(evs, agent.EventReasoningDelta) != "Let me think." {
		t.Errorf("reasoning = %q", text(evs, agent.EventReasoningDelta))
	}

	evs = parseAll(t, OpenCode, "testdata/opencode-http500.jsonl")
	if f := terminal(t, evs); f.Type != agent.EventRunFailed || f.Text != "APIError: fake upstream rejected the request (HTTP 400)" {
		t.Errorf("error = %+v", f)
	}
}

func TestOpenCodeEdges(t *testing.T) {
	p := NewOpenCodeParser("opencode", "ses_root")
	lines := []string{
		`{"type":"step_start","sessionID":"ses_root","part":{"type":"step-start"}}`,
		`{"type":"tool_use","sessionID":"ses_root","part":{"tool":"task","callID":"c1","state":{"status":"running","input":{"description":"sub"}}}}`,
		`{"type":"step_start","sessionID":"ses_child","part":{"type":"step-start"}}`,
		`{"type":"text","sessionID":"ses_child","part":{"type":"text","text":"child text"}}`,
		`{"type":"step_finish","sessionID":"ses_child","part":{"reason":"stop","tokens":{"input":5,"output":5}}}`,
		`{"type":"tool_use","sessionID":"ses_root","part":{"tool":"task","callID":"c1","state":{"status":"error","input":{"description":"sub"},"error":"subagent failed"}}}`,
		`{"type":"step_finish","sessionID":"ses_root","part":{"reason":"content-filter"}}`,
		`{"type":"brand_new","sessionID":"ses_root"}`,
		`{"type":"step_finish","sessionID":"ses_root","part":{"reason":"length","tokens":{"input":1,"output":2}}}`,
	}
	var evs []agent.Event
	for _, l := range lines {
		e, err := p.Parse([]byte(l))
		if err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		evs = append(evs, e...)
	}
	want := []agent.EventType{
		agent.EventToolStarted, // root resumed: no session.updated; child ignored
		agent.EventToolCompleted,
		agent.EventProviderNative,
		agent.EventUsageUpdated, agent.EventSystem, agent.EventRunCompleted,
	}
	if got := providertest.Types(evs); !slices.Equal(got, want) {
		t.Fatalf("types = %v\nwant %v", got, want)
	}
	if !evs[1].Tool.IsError || evs[1].Tool.Output != "subagent failed" || evs[4].Subtype != "max_tokens" {
		t.Errorf("events = %+v", evs)
	}
	if _, err := p.Parse([]byte(`{"type":"text","part":"oops"}`)); err == nil {
		t.Error("a malformed part parsed")
	}
}

func TestCursorFixtures(t *testing.T) {
	evs := parseAll(t, CursorAgent, "testdata/cursor-agent-tool.jsonl")
	checkTexts(t, evs, "I'll read the file.The file says: hello from alpha", "Reading alpha.txt to report its exact contents.")
	var tools []agent.Tool
	for _, e := range evs {
		if e.Type == agent.EventToolCompleted {
			tools = append(tools, *e.Tool)
		}
	}
	if len(tools) != 3 || tools[0].Name != "read" || tools[0].Output != "hello from alpha\n" || tools[0].IsError ||
		tools[1].Name != "shell" || !tools[1].IsError || !strings.Contains(tools[1].Output, "No such file") ||
		tools[2].Name != "write" || !tools[2].IsError || tools[2].Output != "Permission denied: /etc/forbidden" {
		t.Fatalf("tools = %+v", tools)
	}
	if f := terminal(t, evs); f.Type != agent.EventRunCompleted || evs[0].Type != agent.EventSessionUpdated || evs[0].Model != "Auto" {
		t.Errorf("first %+v, terminal %+v", evs[0], f)
	}
	evs = parseAll(t, CursorAgent, "testdata/cursor-agent-buffered.jsonl")
	if got := text(evs, agent.EventAssistantDelta); got != "pong" {
		t.Errorf("buffered text = %q", got)
	}

	p := NewCursorParser("")
	ls := []string{
		`{"type":"assistant","message":{"content":[{"type":"text","text":"ha"}]},"timestamp_ms":1}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"ha"}]},"timestamp_ms":2}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"hahaha"}]}}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"x"}]},"timestamp_ms":3}`,
		`{"type":"assistant","message":{"content":[{"type":"text","text":"diverged"}]}}`,
		`{"type":"result","subtype":"error","is_error":true,"result":"boom"}`,
	}
	var all []agent.Event
	for _, l := range ls {
		e, err := p.Parse([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, e...)
	}
	if got := text(all, agent.EventAssistantDelta); got != "hahahax" {
		t.Errorf("repeated deltas / suffix recovery / divergence: %q", got)
	}
	if f := terminal(t, all); f.Type != agent.EventRunFailed || f.Text != "boom" {
		t.Errorf("failed result = %+v", f)
	}
}

func TestCopilotFixtures(t *testing.T) {
	evs := parseAll(t, Copilot, "testdata/copilot-tool.jsonl")
	checkTexts(t, evs, "Let me list the files.\n\nThere are two files: a.txt and b.txt.", "I should run ls.")
	var last agent.Usage
	var outs []agent.Tool
	for _, e := range evs {
		if e.Type == agent.EventUsageUpdated {
			last = *e.Usage
		}
		if e.Type == agent.EventToolCompleted {
			outs = append(outs, *e.Tool)
		}
	}
	if last.InputTokens != 2500 || last.OutputTokens != 52 || last.CacheReadTokens != 800 {
		t.Errorf("usage = %+v", last)
	}
	if len(outs) != 2 || outs[0].Output != "a.txt\nb.txt\n" || outs[0].IsError || !outs[1].IsError || outs[1].Name != "view" {
		t.Errorf("tools = %+v", outs)
	}
	if f := terminal(t, evs); f.Type != agent.EventRunCompleted {
		t.Errorf("terminal = %+v", f)
	}
	if evs[len(evs)-2].Type != agent.EventSessionUpdated || evs[len(evs)-2].SessionID != "0f2c5a9e-4c7b-4a43-9d3e-7f1e2b6c8a10" || evs[len(evs)-2].Model != "claude-sonnet-4.6" {
		t.Errorf("session = %+v", evs[len(evs)-2])
	}
	evs = parseAll(t, Copilot, "testdata/copilot-error.jsonl")
	if f := terminal(t, evs); f.Type != agent.EventRunFailed || f.Text != "authorization: Access denied by policy settings" {
		t.Errorf("error terminal = %+v", f)
	}
	// A result with neither exitCode nor success is not a success.
	p := NewCopilotParser("")
	e, _ := p.Parse([]byte(`{"type":"result"}`))
	if terminal(t, e).Type != agent.EventRunFailed {
		t.Errorf("statusless result = %+v", e)
	}
}

func TestQoderFixtures(t *testing.T) {
	evs := parseAll(t, Qoder, "testdata/qoder-tool.jsonl")
	want := []agent.EventType{
		agent.EventSessionUpdated,
		agent.EventReasoningDelta, agent.EventToolStarted, agent.EventAssistantDelta,
		agent.EventToolCompleted,
		agent.EventAssistantDelta,
		agent.EventUsageUpdated, agent.EventRunCompleted,
	}
	if got := providertest.Types(evs); !slices.Equal(got, want) {
		t.Fatalf("types = %v\nwant %v", got, want)
	}
	if evs[4].Tool.Output != "main.go\ngo.mod" || evs[4].Tool.Name != "Bash" || evs[5].Text != "\n\nHello world" {
		t.Errorf("events = %+v", evs)
	}
	evs = parseAll(t, Qoder, "testdata/qoder-error.jsonl")
	if f := terminal(t, evs); f.Type != agent.EventRunFailed || f.Text != "qoder run failed: error" {
		t.Errorf("terminal = %+v", f)
	}
	if !slices.Contains(providertest.Types(evs), agent.EventSystem) || !strings.Contains(text(evs, agent.EventSystem), "Quota exceeded") {
		t.Errorf("assistant error not shown: %+v", evs)
	}
}

// TestFamilyFieldOfAnotherType: a family's record is the union of its
// dialects' fields, so a field one dialect prints with another type than the
// other's (or a CLI's new form of it) is left zero; it does not cost the line
// (a lost result would be a lost terminal event).
func TestFamilyFieldOfAnotherType(t *testing.T) {
	for _, tc := range []struct {
		d    Dialect
		line string
		want agent.EventType
		text string
	}{
		{CursorAgent, `{"type":"result","subtype":"success","result":"done","stop_reason":1}`, agent.EventRunCompleted, "done"},
		{CursorAgent, `{"type":"result","subtype":"success","result":"done","total_cost_usd":"x"}`, agent.EventRunCompleted, "done"},
		{Qoder, `{"type":"result","subtype":"success","result":"ok","text":5,"timestamp_ms":"t"}`, agent.EventRunCompleted, "ok"},
		{GrokCLI, `{"role":"tool","tool_call_id":"c1","content":"out","session_id":7,"type":{"a":1}}`, agent.EventToolCompleted, ""},
	} {
		evs, err := newParser(t, tc.d).Parse([]byte(tc.line))
		if err != nil || len(evs) == 0 || evs[len(evs)-1].Type != tc.want || evs[len(evs)-1].Text != tc.text {
			t.Errorf("%s %s: %+v, %v", tc.d, tc.line, evs, err)
		}
	}
}

func TestParsersRejectMalformed(t *testing.T) {
	for _, d := range Dialects {
		p := newParser(t, d)
		for _, bad := range []string{"not json", `{"type":`, `[1]`, `"s"`} {
			if _, err := p.Parse([]byte(bad)); err == nil {
				t.Errorf("%s: Parse(%q) succeeded", d, bad)
			}
		}
		evs, err := p.Parse([]byte(`{"type":"zz_unknown","v":1}`))
		if err != nil || len(evs) != 1 || evs[0].Type != agent.EventProviderNative || string(evs[0].Native.Payload) != `{"type":"zz_unknown","v":1}` {
			t.Errorf("%s: unknown record = %+v, %v", d, evs, err)
		}
		big := `{"type":"zz_unknown","pad":"` + strings.Repeat("x", MaxNativePayload) + `"}`
		evs, _ = p.Parse([]byte(big))
		if len(evs) != 1 || !strings.Contains(string(evs[0].Native.Payload), `"truncated":true`) {
			t.Errorf("%s: payload not bounded", d)
		}
	}
	if _, err := NewParser("nope", "x", ""); err == nil {
		t.Error("unknown dialect accepted")
	}
}

func fuzzDialect(f *testing.F, d Dialect) {
	for in, fd := range fixtures(f) {
		if fd != d {
			continue
		}
		for _, l := range providertest.Lines(f, in) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		p, _ := NewParser(d, agent.ProviderID(d), "known")
		for range 2 { // twice: state from the first parse must not break the second
			evs, err := p.Parse(line)
			if err != nil && len(evs) > 0 {
				t.Fatalf("events with an error: %+v", evs)
			}
			providertest.CheckFuzzEvents(t, evs, providertest.FuzzLimits{NativePayload: MaxNativePayload, ToolOutput: MaxToolOutput}, nil)
		}
	})
}

func FuzzOpenCode(f *testing.F) { fuzzDialect(f, OpenCode) }
func FuzzCursor(f *testing.F)   { fuzzDialect(f, CursorAgent) }
func FuzzCopilot(f *testing.F)  { fuzzDialect(f, Copilot) }
func FuzzQoder(f *testing.F)    { fuzzDialect(f, Qoder) }

// turnFixtures are a captured turn (testdata/<file>) of each dialect.
var turnFixtures = []struct {
	d    Dialect
	file string
}{
	{OpenCode, "opencode-tool.jsonl"},
	{Mimo, "mimo-text.jsonl"},
	{CursorAgent, "cursor-agent-tool.jsonl"},
	{Copilot, "copilot-tool.jsonl"},
	{Qoder, "qoder-tool.jsonl"},
	{GrokCLI, "grok-cli-tool.jsonl"},
}

func BenchmarkParse(b *testing.B) {
	for _, tc := range turnFixtures {
		b.Run(string(tc.d), func(b *testing.B) {
			ls := providertest.Lines(b, filepath.Join("testdata", tc.file))
			providertest.BenchLines(b, ls, func() {
				p, _ := NewParser(tc.d, agent.ProviderID(tc.d), "")
				for _, l := range ls {
					if _, err := p.Parse(l); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
