// Parser unit tests and the parser fuzz test.

package acp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func mustParse(t *testing.T, p *Parser, line string) Parsed {
	t.Helper()
	out, err := p.Parse([]byte(line))
	if err != nil {
		t.Fatalf("Parse(%.80s): %v", line, err)
	}
	return out
}

const permLine = `{"jsonrpc":"2.0","id":%s,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t","title":"edit a.go","kind":"edit","content":[{"type":"diff","path":"/w/a.go","oldText":"a\nb","newText":"c"}]},"options":[{"optionId":"ok","kind":"allow_once","name":"OK"},{"optionId":"no","kind":"reject_always","name":"Never"}]}}`

func perm(id string) string { return strings.Replace(permLine, "%s", id, 1) }

func TestParseMalformedAndUnknown(t *testing.T) {
	p := NewParser(ParserOptions{Provider: "x"})
	for _, bad := range []string{"not json", `{"jsonrpc":`, `[1,2]`, `{"jsonrpc":"2.0"}`, `{"jsonrpc":"2.0","id":99,"result":{}}`} {
		if _, err := p.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	out := mustParse(t, p, `{"jsonrpc":"2.0","method":"x/brand_new","params":{"a":1}}`)
	if len(out.Events) != 1 || out.Events[0].Type != agent.EventProviderNative || out.Events[0].Native.Kind != "x/brand_new" {
		t.Fatalf("unknown notification = %+v", out.Events)
	}
	big := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"available_commands_update","pad":"` + strings.Repeat("x", MaxNativePayload) + `"}}}`
	out = mustParse(t, p, big)
	if pl := string(out.Events[0].Native.Payload); len(pl) > 100 || !strings.Contains(pl, `"truncated":true`) {
		t.Fatalf("payload not bounded: %.100s", pl)
	}
}

func TestParseIDsAndAnswers(t *testing.T) {
	p := NewParser(ParserOptions{Provider: "x"})
	p.Track(json.RawMessage("3"), "session/prompt")
	// id 0 is a valid id; a string id is kept as a string.
	for _, id := range []string{"0", `"0"`} {
		out := mustParse(t, p, perm(id))
		in := out.Events[len(out.Events)-1].Interaction
		if in.ID != id || string(in.NativeID) != id || in.Kind != agent.KindFileChangeApproval || in.Diff != "--- /w/a.go\n+++ /w/a.go\n-a\n-b\n+c\n" {
			t.Fatalf("interaction %+v", in)
		}
	}
	if _, err := p.Parse([]byte(perm("0"))); !errors.Is(err, agent.ErrDuplicateRequest) {
		t.Fatalf("duplicate: %v", err)
	}
	ev, err := p.Respond(agent.InteractionResponse{InteractionID: `"0"`, Decision: agent.DecisionDecline})
	if err != nil || ev.Resolution.Status != agent.StatusDeclined {
		t.Fatalf("decline: %+v %v", ev, err)
	}
	out := p.TakeOutgoing()
	if len(out) != 1 || string(out[0]) != `{"jsonrpc":"2.0","id":"0","result":{"outcome":{"outcome":"selected","optionId":"no"}}}` {
		t.Fatalf("answer %s (reject_always when there is no reject_once)", out)
	}
	if _, err := p.Respond(agent.InteractionResponse{InteractionID: `"0"`, Decision: agent.DecisionApprove}); !errors.Is(err, agent.ErrUnknownInteraction) {
		t.Fatalf("second answer: %v", err)
	}
	// The prompt answer ends the turn: the open request resolves turn_ended
	// and the agent is told cancelled.
	res := mustParse(t, p, `{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`)
	if res.Reply == nil || res.Reply.Method != "session/prompt" {
		t.Fatalf("reply %+v", res.Reply)
	}
	types := []agent.EventType{}
	for _, ev := range res.Events {
		types = append(types, ev.Type)
	}
	if !slices.Equal(types, []agent.EventType{agent.EventInteractionResolved, agent.EventToolCompleted, agent.EventRunCompleted}) ||
		res.Events[0].Resolution.Status != agent.StatusTurnEnded || res.Events[0].Resolution.InteractionID != "0" {
		t.Fatalf("turn end events %+v", res.Events)
	}
	if out := p.TakeOutgoing(); len(out) != 1 || string(out[0]) != `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}` {
		t.Fatalf("turn end answer %s", out)
	}
}

func TestParseNoMatchingOption(t *testing.T) {
	p := NewParser(ParserOptions{Provider: "x"})
	mustParse(t, p, `{"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"t"},"options":[{"optionId":"ok","kind":"allow_once","name":"OK"}]}}`)
	ev, err := p.Respond(agent.InteractionResponse{InteractionID: "1", Decision: agent.DecisionDecline})
	if err != nil || ev.Resolution.Status != agent.StatusDeclined {
		t.Fatalf("%+v %v", ev, err)
	}
	if out := p.TakeOutgoing(); len(out) != 1 || !strings.Contains(string(out[0]), `"outcome":"cancelled"`) {
		t.Fatalf("a decline without a reject option must answer cancelled: %s", out)
	}
}

func TestParseAgentCancelsRequest(t *testing.T) {
	p := NewParser(ParserOptions{Provider: "x"})
	mustParse(t, p, perm("4"))
	out := mustParse(t, p, `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":4}}`)
	if len(out.Events) != 1 || out.Events[0].Resolution.Status != agent.StatusCancelled || p.Pending("4") {
		t.Fatalf("events %+v", out.Events)
	}
}

func TestParseCancel(t *testing.T) {
	p := NewParser(ParserOptions{Provider: "x"})
	p.Track(json.RawMessage("2"), "session/new")
	mustParse(t, p, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"s9"}}`)
	mustParse(t, p, perm("0"))
	mustParse(t, p, perm("1"))
	evs := p.Cancel()
	if len(evs) != 2 || evs[0].Resolution.Status != agent.StatusCancelled || evs[1].Resolution.InteractionID != "1" {
		t.Fatalf("events %+v", evs)
	}
	out := p.TakeOutgoing()
	want := []string{
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s9"}}`,
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":1,"result":{"outcome":{"outcome":"cancelled"}}}`,
	}
	var got []string
	for _, o := range out {
		got = append(got, string(o))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("outgoing\n%s", strings.Join(got, "\n"))
	}
	if len(p.Cancel()) != 0 || len(p.TakeOutgoing()) != 0 {
		t.Error("a second Cancel sent again")
	}
}

func TestParseSessionNotFound(t *testing.T) {
	cases := map[string]struct {
		def  Definition
		line string
		want bool
	}{
		"qwen":            {Qwen(), `{"code":-32002,"message":"Resource not found: session:x","data":{"uri":"session:x"}}`, true},
		"opencode":        {Opencode(), `{"code":-32603,"message":"Internal error: OpenCode service failure","data":{"service":"session"}}`, true},
		"opencode other":  {Opencode(), `{"code":-32603,"message":"Internal error: disk full"}`, false},
		"gemini":          {Gemini(), `{"code":-32603,"message":"Internal error","data":{"details":"No previous sessions found for this project."}}`, true},
		"gemini invalid":  {Gemini(), `{"code":-32603,"message":"Internal error","data":{"details":"Invalid session identifier \"0\".\n  Searched"}}`, true},
		"gemini other":    {Gemini(), `{"code":-32603,"message":"Internal error","data":{"details":"quota"}}`, false},
		"default -32002":  {Kiro(), `{"code":-32002,"message":"nope"}`, true},
		"default -32603":  {Kiro(), `{"code":-32603,"message":"nope"}`, false},
		"auth not a miss": {Qwen(), `{"code":-32000,"message":"Authentication required"}`, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			p := NewParser(ParserOptions{Provider: c.def.ID, SessionNotFound: c.def.SessionNotFound})
			p.Track(json.RawMessage("2"), "session/load")
			out := mustParse(t, p, `{"jsonrpc":"2.0","id":2,"error":`+c.line+`}`)
			if p.SessionNotFound() != c.want {
				t.Fatalf("SessionNotFound = %v; events %+v", p.SessionNotFound(), out.Events)
			}
			ev := out.Events[0]
			if c.want && (ev.Type != agent.EventSystem || ev.Subtype != "session_not_found") || !c.want && ev.Type != agent.EventRunFailed {
				t.Fatalf("event %+v", ev)
			}
		})
	}
}

func TestParseToolUpdateUnseenID(t *testing.T) {
	// gemini: the first thing for a call can be a tool_call_update.
	p := NewParser(ParserOptions{Provider: "gemini"})
	out := mustParse(t, p, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_17_0","status":"completed","title":"echo hi","kind":"execute","rawOutput":"hi\n"}}}`)
	if len(out.Events) != 2 || out.Events[0].Type != agent.EventToolStarted || out.Events[1].Tool.Output != "hi\n" || out.Events[1].Tool.Name != "run_shell_command" {
		t.Fatalf("events %+v", out.Events)
	}
	// Nothing more for a completed call.
	if out := mustParse(t, p, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__run_shell_command_17_0","status":"completed"}}}`); len(out.Events) != 0 {
		t.Fatalf("repeat: %+v", out.Events)
	}
}

func FuzzParse(f *testing.F) {
	for _, in := range providertest.Inputs(f, "testdata/*.jsonl") {
		for _, l := range providertest.Messages(f, in, "recv") {
			if len(l) < 64<<10 {
				f.Add(l)
			}
		}
	}
	f.Add([]byte(perm("0")))
	f.Fuzz(func(t *testing.T, line []byte) {
		p := NewParser(ParserOptions{Provider: "fuzz", EmitSession: true, FS: &memFS{}})
		for _, m := range []string{"initialize", "session/new", "session/prompt", "session/load"} {
			p.Request(m, nil)
		}
		out, err := p.Parse(line)
		if err != nil && len(out.Events) > 0 && !errors.Is(err, agent.ErrDuplicateRequest) {
			// Only a bad permission request returns events with an error.
			if !strings.Contains(err.Error(), "session/request_permission") {
				t.Fatalf("events with error %v: %+v", err, out.Events)
			}
		}
		providertest.CheckFuzzEvents(t, out.Events, providertest.FuzzLimits{NativePayload: MaxNativePayload}, func(r agent.InteractionResponse) error {
			_, err := p.Respond(r)
			return err
		})
		for _, o := range p.TakeOutgoing() {
			if !json.Valid(o) {
				t.Fatalf("invalid outgoing %q", o)
			}
		}
		p.Cancel()
		p.EndTurn()
	})
}

// TestParseMadeImages: a completed tool call whose content holds an image
// block gives an image event with its bytes; a read tool's image (a file
// the agent looked at) and a failed call's give none.
func TestParseMadeImages(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\n chart bytes")
	b64 := base64.StdEncoding.EncodeToString(img)
	update := func(id, kind, status string) string {
		return `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"` + id +
			`","title":"t","kind":"` + kind + `","status":"` + status + `","content":[{"type":"content","content":{"type":"text","text":"ok"}},{"type":"content","content":{"type":"image","data":"` + b64 + `","mimeType":"image/png"}}]}}}`
	}
	for _, c := range []struct {
		id, kind, status string
		want             int
	}{{"t1", "other", "completed", 1}, {"t2", "read", "completed", 0}, {"t3", "other", "failed", 0}} {
		p := NewParser(ParserOptions{Provider: "x"})
		var got []*agent.MadeImage
		for _, e := range mustParse(t, p, update(c.id, c.kind, c.status)).Events {
			if e.Type == agent.EventImage {
				got = append(got, e.Image)
			}
		}
		if len(got) != c.want || (c.want == 1 && (!bytes.Equal(got[0].Data, img) || got[0].ToolID != c.id || got[0].MediaType != "image/png")) {
			t.Errorf("%+v: images %+v", c, got)
		}
	}
}
