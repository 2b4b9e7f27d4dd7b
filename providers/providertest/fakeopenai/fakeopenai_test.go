// Tests of the fake itself, with a plain HTTP client.

package fakeopenai

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// sseData returns the data payloads of an SSE body.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

const shellTools = `[{"type":"function","function":{"name":"read","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}},
 {"type":"function","function":{"name":"run_shell_command","parameters":{"type":"object","properties":{"command":{"type":"string"},"description":{"type":"string"},"timeout":{"type":"number"}},"required":["command","description","timeout"]}}}]`

// streamed is a Chat Completions stream put back together.
type streamed struct {
	role, content, reasoning, finish string
	calls                            map[int]*ToolCall
	usage                            map[string]int
	done                             bool
	chunks                           int
}

func assemble(t *testing.T, data []string) streamed {
	t.Helper()
	s := streamed{calls: map[int]*ToolCall{}}
	for _, d := range data {
		if d == "[DONE]" {
			s.done = true
			continue
		}
		if s.done {
			t.Fatalf("data after [DONE]: %s", d)
		}
		var c struct {
			Object  string `json:"object"`
			Choices []struct {
				Delta struct {
					Role      string         `json:"role"`
					Content   string         `json:"content"`
					Reasoning string         `json:"reasoning_content"`
					ToolCalls []wireToolCall `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage map[string]int `json:"usage"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object %q", c.Object)
		}
		s.chunks++
		if c.Usage != nil {
			s.usage = c.Usage
		}
		for _, ch := range c.Choices {
			s.role += ch.Delta.Role
			s.content += ch.Delta.Content
			s.reasoning += ch.Delta.Reasoning
			for _, tc := range ch.Delta.ToolCalls {
				call := s.calls[tc.Index]
				if call == nil {
					call = &ToolCall{}
					s.calls[tc.Index] = call
				}
				if tc.ID != "" {
					call.ID = tc.ID
				}
				call.Name += tc.Function.Name
				call.Arguments += tc.Function.Arguments
			}
			if ch.FinishReason != nil {
				s.finish = *ch.FinishReason
			}
		}
	}
	return s
}

func TestChatStreamText(t *testing.T) {
	s := New(t, When("hello", Reasoning([]string{"hm, ", "ok"}, "Hello ", "there.")))
	body := `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"tools":` + shellTools + `,
	  "messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"say hello"}]}]}`
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", body, map[string]string{"Authorization": "Bearer sk-secret"})
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	got := assemble(t, sseData(t, resp.Body))
	if got.role != "assistant" || got.content != "Hello there." || got.reasoning != "hm, ok" || got.finish != "stop" || !got.done {
		t.Fatalf("stream = %+v", got)
	}
	if got.usage["prompt_tokens"] == 0 || got.usage["total_tokens"] != got.usage["prompt_tokens"]+got.usage["completion_tokens"] {
		t.Errorf("usage %v", got.usage)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.API != APIOpenAI || r.Model != "m1" || !r.Stream || !r.IncludeUsage || r.LastUserText() != "say hello" || r.Header.Get("Authorization") != "" {
		t.Errorf("recorded %+v", r)
	}
	if names := strings.Join(r.ToolNames(), ","); names != "read,run_shell_command" {
		t.Errorf("tools %s", names)
	}
	if len(s.ChatRequests()) != 1 {
		t.Error("ChatRequests misses the request with tools")
	}
}

func TestChatNoUsageWithoutStreamOptions(t *testing.T) {
	s := New(t, Text("x"))
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `{"stream":true,"tools":`+shellTools+`,"messages":[{"role":"user","content":"hi"}]}`, nil)
	got := assemble(t, sseData(t, resp.Body))
	if got.usage != nil || got.content != "x" || !got.done {
		t.Fatalf("stream = %+v", got)
	}
}

func TestChatShellToolRoundTrip(t *testing.T) {
	s := New(t, When("CMD", Shell("echo hi > out.txt")))
	body := `{"stream":true,"tools":` + shellTools + `,"messages":[{"role":"user","content":"CMD please"}]}`
	got := assemble(t, sseData(t, fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", body, nil).Body))
	call := got.calls[0]
	if got.finish != "tool_calls" || call == nil || call.Name != "run_shell_command" || call.ID == "" || len(got.calls) != 1 {
		t.Fatalf("stream = %+v calls %+v", got, call)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(call.Arguments), &args); err != nil {
		t.Fatalf("arguments %q: %v", call.Arguments, err)
	}
	if args["command"] != "echo hi > out.txt" || args["description"] == "" || args["timeout"] != nil {
		t.Errorf("arguments %v (required strings filled, numbers left out)", args)
	}
	if got.content != "Calling run_shell_command." {
		t.Errorf("content %q", got.content)
	}

	// The client comes back with the result: the final answer quotes it.
	msgs, _ := json.Marshal([]any{
		map[string]any{"role": "user", "content": "CMD please"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": call.ID, "type": "function", "function": map[string]any{"name": call.Name, "arguments": call.Arguments}}}},
		map[string]any{"role": "tool", "tool_call_id": call.ID, "content": "hi\n"},
	})
	body = `{"stream":false,"tools":` + shellTools + `,"messages":` + string(msgs) + `}`
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", body, nil)
	var full struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage map[string]int `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&full); err != nil {
		t.Fatal(err)
	}
	if full.Object != "chat.completion" || len(full.Choices) != 1 || full.Choices[0].Message.Content != "Done. Tool result: hi" || full.Choices[0].FinishReason != "stop" || full.Usage["total_tokens"] == 0 {
		t.Fatalf("reply %+v", full)
	}
	reqs := s.Requests()
	if tr := reqs[1].ToolResults(); len(tr) != 1 || tr[0].ToolCallID != call.ID || tr[0].Text != "hi\n" {
		t.Errorf("tool results %+v", tr)
	}
	if !strings.Contains(reqs[1].Transcript(), "assistant: call run_shell_command(") {
		t.Errorf("transcript %q", reqs[1].Transcript())
	}
}

func TestWriteFilePicksPathKey(t *testing.T) {
	s := New(t, WriteFile("/tmp/x/hello.txt", "hi\n"))
	tools := `[{"type":"function","function":{"name":"write","parameters":{"type":"object","properties":{"filePath":{"type":"string"},"content":{"type":"string"}},"required":["filePath","content"]}}}]`
	got := assemble(t, sseData(t, fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `{"stream":true,"tools":`+tools+`,"messages":[{"role":"user","content":"write"}]}`, nil).Body))
	if c := got.calls[0]; c == nil || c.Name != "write" || c.Arguments != `{"content":"hi\n","filePath":"/tmp/x/hello.txt"}` {
		t.Fatalf("call %+v", c)
	}
}

func TestFallbacks(t *testing.T) {
	s := New(t, When("CMD", Shell("true")))
	// No tools offered (a title request): "Fake title", even when a script
	// keys on the text, because Shell has no tool to call.
	got := assemble(t, sseData(t, fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"CMD x"}]}`, nil).Body))
	if got.content != "Fake title" {
		t.Errorf("no-tools reply %q", got.content)
	}
	got = assemble(t, sseData(t, fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `{"stream":true,"tools":`+shellTools+`,"messages":[{"role":"user","content":"other"}]}`, nil).Body))
	if !strings.HasPrefix(got.content, "fake: no scenario") {
		t.Errorf("unmatched reply %q", got.content)
	}
	if n := len(s.ChatRequests()); n != 1 {
		t.Errorf("ChatRequests = %d, want only the one with tools", n)
	}
}

func TestErrorsAndRoutes(t *testing.T) {
	s := New(t, When("HTTP500", Error(500, "fake upstream failure")))
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"HTTP500"}]}`, nil)
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 500 || e.Error.Message != "fake upstream failure" || e.Error.Type != "server_error" {
		t.Errorf("500: status %d body %+v err %v", resp.StatusCode, e, err)
	}
	if resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1/chat/completions", `not json`, nil); resp.StatusCode != 400 {
		t.Errorf("bad body: status %d", resp.StatusCode)
	}
	if resp := fakehttp.Post(t, t.Context(), s.URL()+"/v2/nothing", `{}`, nil); resp.StatusCode != 404 {
		t.Errorf("unknown route: status %d", resp.StatusCode)
	}
	mresp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(mresp.Body).Decode(&models); err != nil || len(models.Data) != 1 || models.Data[0].ID != DefaultModel {
		t.Errorf("models %+v %v", models, err)
	}
}

func TestSlowStopsWhenClientLeaves(t *testing.T) {
	s := New(t, Slow(100, 50*time.Millisecond))
	ctx, cancel := context.WithCancel(t.Context())
	resp := fakehttp.Post(t, ctx, s.URL()+"/v1/chat/completions", `{"stream":true,"tools":`+shellTools+`,"messages":[{"role":"user","content":"slow"}]}`, nil)
	start := time.Now()
	br := bufio.NewReader(resp.Body)
	if err := fakehttp.AwaitLines(br, "word", 3); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := io.ReadAll(br); err == nil {
		t.Error("stream went on after the client left")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s", d)
	}
}

func TestGeminiStream(t *testing.T) {
	s := New(t, When("CMD", Shell("echo g")))
	body := `{"contents":[{"role":"user","parts":[{"text":"CMD now"}]}],
	  "systemInstruction":{"parts":[{"text":"sys"}]},
	  "tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}]}]}`
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1beta/models/"+GeminiModel+":streamGenerateContent?alt=sse", body, map[string]string{"x-goog-api-key": "secret"})
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var text string
	var call map[string]any
	var finish string
	var usage map[string]int
	for _, d := range sseData(t, resp.Body) {
		var c struct {
			Candidates []struct {
				Content struct {
					Role  string           `json:"role"`
					Parts []map[string]any `json:"parts"`
				} `json:"content"`
				FinishReason string `json:"finishReason"`
			} `json:"candidates"`
			UsageMetadata map[string]int `json:"usageMetadata"`
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		for _, p := range c.Candidates[0].Content.Parts {
			if s, ok := p["text"].(string); ok {
				text += s
			}
			if fc, ok := p["functionCall"].(map[string]any); ok {
				call = fc
			}
		}
		if c.Candidates[0].FinishReason != "" {
			finish = c.Candidates[0].FinishReason
		}
		if c.UsageMetadata != nil {
			usage = c.UsageMetadata
		}
	}
	if text != "Calling run_shell_command." || finish != "STOP" || call["name"] != "run_shell_command" || usage["totalTokenCount"] == 0 {
		t.Fatalf("text %q finish %q call %v usage %v", text, finish, call, usage)
	}
	if args, _ := call["args"].(map[string]any); args["command"] != "echo g" {
		t.Errorf("args %v", call["args"])
	}

	// The function response comes back in a user content.
	body2 := `{"contents":[{"role":"user","parts":[{"text":"CMD now"}]},
	  {"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"echo g"}}}]},
	  {"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"error":"Tool \"run_shell_command\" was canceled by the user."}}}]}],
	  "tools":[{"functionDeclarations":[{"name":"run_shell_command"}]}]}`
	resp = fakehttp.Post(t, t.Context(), s.URL()+"/v1beta/models/"+GeminiModel+":generateContent", body2, nil)
	var full struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text string `json:"text"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&full); err != nil {
		t.Fatal(err)
	}
	if got := full.Candidates[0].Content.Parts[0].Text; got != `Done. Tool error: Tool "run_shell_command" was canceled by the user.` {
		t.Errorf("final %q", got)
	}
	reqs := s.Requests()
	r := reqs[0]
	if r.API != APIGemini || r.Model != GeminiModel || !r.Stream || r.Header.Get("X-Goog-Api-Key") != "" || r.Messages[0].Role != RoleSystem || r.LastUserText() != "CMD now" {
		t.Errorf("recorded %+v", r)
	}
	if tr := reqs[1].ToolResults(); len(tr) != 1 || !tr[0].IsError || tr[0].ToolName != "run_shell_command" {
		t.Errorf("tool results %+v", tr)
	}
}

func TestGeminiOtherRoutes(t *testing.T) {
	s := New(t, When("HTTP500", Error(500, "boom")), Slow(3, 0))
	resp := fakehttp.Post(t, t.Context(), s.URL()+"/v1beta/models/"+GeminiModel+":countTokens", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, nil)
	var ct struct {
		TotalTokens int `json:"totalTokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ct); err != nil || ct.TotalTokens == 0 {
		t.Errorf("countTokens %+v %v", ct, err)
	}
	resp = fakehttp.Post(t, t.Context(), s.URL()+"/v1beta/models/"+GeminiModel+":streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"HTTP500"}]}]}`, nil)
	var e struct {
		Error struct {
			Code   int    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != 500 || e.Error.Status != "INTERNAL" {
		t.Errorf("500: %d %+v %v", resp.StatusCode, e, err)
	}
	// Without alt=sse the stream is one JSON array.
	resp = fakehttp.Post(t, t.Context(), s.URL()+"/v1beta/models/"+GeminiModel+":streamGenerateContent", `{"contents":[{"role":"user","parts":[{"text":"go"}]}]}`, nil)
	b, _ := io.ReadAll(resp.Body)
	var arr []json.RawMessage
	if err := json.Unmarshal(b, &arr); err != nil || len(arr) != 4 {
		t.Errorf("array stream: %v, %d elements: %s", err, len(arr), bytes.TrimSpace(b))
	}
	mresp, err := http.Get(s.URL() + "/v1beta/models")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	if mresp.StatusCode != 200 {
		t.Errorf("models status %d", mresp.StatusCode)
	}
}
