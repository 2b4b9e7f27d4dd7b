// Parser and command-line unit tests.

package claude

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

const bashRequest = `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","display_name":"Bash","input":{"command":"ls -la"},"description":"List","tool_use_id":"toolu_1"}}`

func TestParseMalformedAndUnknown(t *testing.T) {
	p := NewParser("")
	for _, bad := range []string{"not json", `{"type":`, `[1,2]`} {
		if _, err := p.Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	evs := providertest.MustParse(t, p, `{"type":"brand_new","x":1}`)
	if len(evs) != 1 || evs[0].Type != agent.EventProviderNative || evs[0].Native.Kind != "brand_new" || string(evs[0].Native.Payload) != `{"type":"brand_new","x":1}` {
		t.Fatalf("unknown record = %+v", evs)
	}
	big := `{"type":"brand_new","pad":"` + strings.Repeat("x", MaxNativePayload) + `"}`
	evs = providertest.MustParse(t, p, big)
	if len(evs[0].Native.Payload) > 100 || !strings.Contains(string(evs[0].Native.Payload), `"truncated":true`) {
		t.Fatalf("payload not bounded: %.100s", evs[0].Native.Payload)
	}
	evs = providertest.MustParse(t, p, `{"type":"system","subtype":"compact_boundary","session_id":"s"}`)
	if len(evs) != 1 || evs[0].Type != agent.EventSystem || evs[0].Subtype != "compact_boundary" {
		t.Fatalf("unknown system subtype = %+v", evs)
	}
}

// TestParseSessionOnlyWhenChanged: session.updated reports a new session,
// and the model of a resumed one once (the chat shows it); a repeated init
// of the same session and model (every turn has one) says nothing.
func TestParseSessionOnlyWhenChanged(t *testing.T) {
	p := NewParser("s1")
	evs := providertest.MustParse(t, p, `{"type":"system","subtype":"init","session_id":"s1","model":"m"}`)
	if len(evs) != 1 || evs[0].SessionID != "s1" || evs[0].Model != "m" {
		t.Fatalf("resumed session = %+v, want its model once", evs)
	}
	if evs := providertest.MustParse(t, p, `{"type":"system","subtype":"init","session_id":"s1","model":"m"}`); len(evs) != 0 {
		t.Fatalf("same session and model emitted %+v", evs)
	}
	evs = providertest.MustParse(t, p, `{"type":"system","subtype":"init","session_id":"s2","model":"m"}`)
	if len(evs) != 1 || evs[0].SessionID != "s2" || evs[0].Model != "m" {
		t.Fatalf("new session = %+v", evs)
	}
	evs = providertest.MustParse(t, p, `{"type":"system","subtype":"init","session_id":"s2","model":"m2"}`)
	if len(evs) != 1 || evs[0].SessionID != "s2" || evs[0].Model != "m2" {
		t.Fatalf("new model = %+v", evs)
	}
}

func TestParseTextNotDuplicated(t *testing.T) {
	p := NewParser("")
	delta := `{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}},"api_message_id":"m1"}`
	whole := `{"type":"assistant","message":{"id":"m1","content":[{"type":"text","text":"Hi"}]}}`
	other := `{"type":"assistant","message":{"id":"m2","content":[{"type":"text","text":"No partials"}]}}`
	var texts []string
	for _, l := range []string{delta, whole, other} {
		for _, ev := range providertest.MustParse(t, p, l) {
			texts = append(texts, ev.Text)
		}
	}
	if !slices.Equal(texts, []string{"Hi", "No partials"}) {
		t.Fatalf("texts = %q", texts)
	}
}

func TestParseToolOutputBounded(t *testing.T) {
	p := NewParser("")
	providertest.MustParse(t, p, `{"type":"assistant","message":{"id":"m","content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/a/b"}}]}}`)
	out := strings.Repeat("é", MaxToolOutput)
	line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "text", "text": out}}, "is_error": true},
	}}})
	evs := providertest.MustParse(t, p, string(line))
	if len(evs) != 1 || evs[0].Type != agent.EventToolCompleted {
		t.Fatalf("events = %+v", evs)
	}
	tool := evs[0].Tool
	if tool.Name != "Read" || !tool.IsError || len(tool.Output) > MaxToolOutput+3 || !strings.HasSuffix(tool.Output, "é…") {
		t.Fatalf("tool = name %q err %v len %d", tool.Name, tool.IsError, len(tool.Output))
	}
}

func TestParseInteractions(t *testing.T) {
	t.Run("pending at turn end", func(t *testing.T) {
		p := NewParser("")
		evs := providertest.MustParse(t, p, bashRequest)
		in := evs[0].Interaction
		if in.Kind != agent.KindCommandApproval || in.Command != "ls -la" || in.ID != "r1" || string(in.NativeID) != `"r1"` || in.Title != "Bash: ls -la" {
			t.Fatalf("interaction = %+v", in)
		}
		evs = providertest.MustParse(t, p, `{"type":"result","subtype":"success","is_error":false,"result":"ok"}`)
		if evs[0].Type != agent.EventInteractionResolved || evs[0].Resolution.Status != agent.StatusTurnEnded || evs[len(evs)-1].Type != agent.EventRunCompleted {
			t.Fatalf("events = %+v", evs)
		}
		if _, err := p.Respond(agent.InteractionResponse{InteractionID: "r1", Decision: agent.DecisionApprove}); !errors.Is(err, agent.ErrUnknownInteraction) {
			t.Fatalf("late response: %v", err)
		}
	})
	t.Run("numeric id kept byte-exact", func(t *testing.T) {
		p := NewParser("")
		evs := providertest.MustParse(t, p, strings.Replace(bashRequest, `"r1"`, `7`, 1))
		if evs[0].Interaction.ID != "7" || string(evs[0].Interaction.NativeID) != "7" {
			t.Fatalf("ids = %q %s", evs[0].Interaction.ID, evs[0].Interaction.NativeID)
		}
		if _, err := p.Respond(agent.InteractionResponse{InteractionID: "7", Decision: agent.DecisionDecline}); err != nil {
			t.Fatal(err)
		}
		out := p.TakeOutgoing()
		if len(out) != 1 || !strings.Contains(string(out[0]), `"request_id":7,`) || !strings.Contains(string(out[0]), `"behavior":"deny"`) {
			t.Fatalf("response = %s", out)
		}
	})
	t.Run("duplicate id", func(t *testing.T) {
		p := NewParser("")
		providertest.MustParse(t, p, bashRequest)
		if _, err := p.Parse([]byte(bashRequest)); !errors.Is(err, agent.ErrDuplicateRequest) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("auto decision", func(t *testing.T) {
		p := NewParser("")
		p.AutoDecision = agent.DecisionDecline
		evs := providertest.MustParse(t, p, bashRequest)
		if len(evs) != 2 || evs[1].Resolution.Status != agent.StatusDeclined || evs[1].Resolution.By != "policy" {
			t.Fatalf("events = %+v", evs)
		}
		if out := p.TakeOutgoing(); len(out) != 1 || !strings.Contains(string(out[0]), `"behavior":"deny"`) {
			t.Fatalf("out = %s", out)
		}
	})
	t.Run("unsupported request answered with error", func(t *testing.T) {
		p := NewParser("")
		evs := providertest.MustParse(t, p, `{"type":"control_request","request_id":"h1","request":{"subtype":"hook_callback"}}`)
		if len(evs) != 1 || evs[0].Type != agent.EventProviderNative {
			t.Fatalf("events = %+v", evs)
		}
		out := p.TakeOutgoing()
		want := `{"type":"control_response","response":{"subtype":"error","request_id":"h1","error":"unsupported request: hook_callback"}}`
		if len(out) != 1 || string(out[0]) != want {
			t.Fatalf("out = %s", out)
		}
	})
	t.Run("file change and other kinds", func(t *testing.T) {
		p := NewParser("")
		evs := providertest.MustParse(t, p, `{"type":"control_request","request_id":"e1","request":{"subtype":"can_use_tool","tool_name":"Edit","input":{"file_path":"/x/a.go","old_string":"a\nb","new_string":"c"},"tool_use_id":"t"}}`)
		in := evs[0].Interaction
		if in.Kind != agent.KindFileChangeApproval || in.Diff != "--- /x/a.go\n+++ /x/a.go\n-a\n-b\n+c\n" {
			t.Fatalf("edit = %+v", in)
		}
		evs = providertest.MustParse(t, p, `{"type":"control_request","request_id":"w1","request":{"subtype":"can_use_tool","tool_name":"WebFetch","input":{"url":"https://example.org"},"tool_use_id":"t2"}}`)
		if in := evs[0].Interaction; in.Kind != agent.KindPermission || in.Title != "WebFetch: https://example.org" {
			t.Fatalf("webfetch = %+v", in)
		}
	})
}

func TestArgs(t *testing.T) {
	ch := make(chan agent.InteractionResponse)
	base := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	tool := []string{"--permission-prompt-tool", "stdio", "--setting-sources="}
	tests := []struct {
		name string
		req  agent.RunRequest
		want []string
	}{
		{"default deny", agent.RunRequest{}, nil},
		{"ask without responses", agent.RunRequest{Approval: agent.ApprovalAsk}, nil},
		{"ask", agent.RunRequest{Approval: agent.ApprovalAsk, Responses: ch}, nil},
		{"accept", agent.RunRequest{Approval: agent.ApprovalAccept, Responses: ch}, nil},
		{"plan", agent.RunRequest{Mode: agent.ModePlan, Approval: agent.ApprovalDeny}, []string{"--permission-mode", "plan"}},
		{"model effort resume fork args", agent.RunRequest{Model: "sonnet", Effort: "high", ResumeID: "s", Fork: true, Args: []string{"--max-turns", "3"}},
			[]string{"--model=sonnet", "--effort=high", "--resume", "s", "--fork-session", "--max-turns", "3"}},
		{"fork without resume", agent.RunRequest{Fork: true}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := slices.Concat(base, tt.want)
			if i := slices.Index(want, "--max-turns"); i >= 0 {
				want = slices.Concat(want[:i], tool, want[i:])
			} else {
				want = slices.Concat(want, tool)
			}
			if got := Args(tt.req); !slices.Equal(got, want) {
				t.Fatalf("Args = %q", got)
			}
		})
	}
}

func TestPromptLineImages(t *testing.T) {
	line, err := PromptLine(agent.RunRequest{Prompt: "what is this?", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"user","message":{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQID"}},{"type":"text","text":"what is this?"}]},"parent_tool_use_id":null,"session_id":""}`
	if string(line) != want {
		t.Fatalf("line =\n%s\nwant\n%s", line, want)
	}
	if _, err := PromptLine(agent.RunRequest{Images: []agent.Image{{Name: "x"}}}); err == nil {
		t.Fatal("empty image accepted")
	}
}

// TestParseMadeImages: an MCP tool's result holding an image block gives
// an image event with its bytes; the same block in the result of the CLI's
// own Read (a file the agent looked at) gives none.
func TestParseMadeImages(t *testing.T) {
	img := []byte("\x89PNG\r\n\x1a\n chart bytes")
	b64 := base64.StdEncoding.EncodeToString(img)
	p := NewParser("")
	providertest.MustParse(t, p, `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"toolu_m","name":"mcp__charts__draw","input":{}},{"type":"tool_use","id":"toolu_r","name":"Read","input":{"file_path":"a.png"}}]},"session_id":"s"}`)
	result := func(id string) string {
		return `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":[{"type":"text","text":"drawn"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"` + b64 + `"}}]}]},"session_id":"s"}`
	}
	evs := providertest.MustParse(t, p, result("toolu_m"))
	if len(evs) != 2 || evs[0].Type != agent.EventToolCompleted || evs[1].Type != agent.EventImage ||
		!bytes.Equal(evs[1].Image.Data, img) || evs[1].Image.MediaType != "image/png" || evs[1].Image.ToolID != "toolu_m" {
		t.Fatalf("MCP result: %+v", evs)
	}
	for _, e := range providertest.MustParse(t, p, result("toolu_r")) {
		if e.Type == agent.EventImage {
			t.Errorf("Read's image posted: %+v", e)
		}
	}
}
