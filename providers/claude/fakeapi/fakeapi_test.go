package fakeapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

type sseEvent struct {
	Name string
	Data map[string]any
}

func post(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	j, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	return fakehttp.Post(t, ctx, url, string(j), map[string]string{"x-api-key": "secret-key", "anthropic-version": "2023-06-01"})
}

// readSSE parses an event stream, checking the framing: every event is
// "event: X\ndata: {json}\n\n" and data.type == X.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	sc := bufio.NewScanner(r)
	var name, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		case line == "":
			if name == "" || data == "" {
				t.Fatalf("malformed event: name=%q data=%q", name, data)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(data), &m); err != nil {
				t.Fatalf("event %s: bad JSON %q: %v", name, data, err)
			}
			if m["type"] != name {
				t.Fatalf("event %s has data.type %v", name, m["type"])
			}
			out = append(out, sseEvent{name, m})
			name, data = "", ""
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if name != "" || data != "" {
		t.Fatalf("stream ended inside an event")
	}
	return out
}

func msgBody(stream bool, msgs ...any) map[string]any {
	return map[string]any{"model": "claude-test-1", "max_tokens": 1024, "stream": stream, "messages": msgs}
}

func user(content any) map[string]any { return map[string]any{"role": "user", "content": content} }

func names(evs []sseEvent) []string {
	var out []string
	for _, e := range evs {
		n := e.Name
		if n == "content_block_delta" {
			n += "/" + e.Data["delta"].(map[string]any)["type"].(string)
		}
		out = append(out, n)
	}
	return out
}

func TestStreamText(t *testing.T) {
	s := fakeapi.New(t, fakeapi.When("hello", fakeapi.Text("Hel", "lo ", "there")))
	resp := post(t, context.Background(), s.URL()+"/v1/messages?beta=true", msgBody(true, user("say hello")))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	evs := readSSE(t, resp.Body)
	want := []string{"message_start", "ping", "content_block_start",
		"content_block_delta/text_delta", "content_block_delta/text_delta", "content_block_delta/text_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	msg := evs[0].Data["message"].(map[string]any)
	if msg["model"] != "claude-test-1" || msg["role"] != "assistant" || msg["stop_reason"] != nil {
		t.Errorf("message_start: %v", msg)
	}
	var text string
	for _, e := range evs[3:6] {
		text += e.Data["delta"].(map[string]any)["text"].(string)
	}
	if text != "Hello there" {
		t.Errorf("text %q", text)
	}
	md := evs[7].Data
	if md["delta"].(map[string]any)["stop_reason"] != "end_turn" || md["usage"].(map[string]any)["output_tokens"] == nil {
		t.Errorf("message_delta: %v", md)
	}
}

func TestStreamThinking(t *testing.T) {
	s := fakeapi.New(t, fakeapi.Thinking([]string{"Let me ", "think."}, "Answer", "."))
	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(true, user("q")))
	defer resp.Body.Close()
	evs := readSSE(t, resp.Body)
	want := []string{"message_start", "ping", "content_block_start",
		"content_block_delta/thinking_delta", "content_block_delta/thinking_delta", "content_block_delta/signature_delta",
		"content_block_stop", "content_block_start", "content_block_delta/text_delta", "content_block_delta/text_delta",
		"content_block_stop", "message_delta", "message_stop"}
	if got := names(evs); !reflect.DeepEqual(got, want) {
		t.Fatalf("events\n got %v\nwant %v", got, want)
	}
	if cb := evs[2].Data["content_block"].(map[string]any); cb["type"] != "thinking" {
		t.Errorf("block 0: %v", cb)
	}
	if idx := evs[8].Data["index"].(float64); idx != 1 {
		t.Errorf("text delta index %v", idx)
	}
}

func TestToolUseRoundTrip(t *testing.T) {
	input := map[string]any{"command": "echo round-trip", "description": "Echo a marker"}
	s := fakeapi.New(t, fakeapi.When("run it", fakeapi.ToolUse("Bash", input)))

	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(true, user("please run it")))
	evs := readSSE(t, resp.Body)
	resp.Body.Close()
	var (
		toolID, toolName string
		partial          []string
		stop             string
	)
	for _, e := range evs {
		switch e.Name {
		case "content_block_start":
			if cb := e.Data["content_block"].(map[string]any); cb["type"] == "tool_use" {
				toolID, toolName = cb["id"].(string), cb["name"].(string)
				if !reflect.DeepEqual(cb["input"], map[string]any{}) {
					t.Errorf("tool_use start input %v, want {}", cb["input"])
				}
			}
		case "content_block_delta":
			if d := e.Data["delta"].(map[string]any); d["type"] == "input_json_delta" {
				partial = append(partial, d["partial_json"].(string))
			}
		case "message_delta":
			stop = e.Data["delta"].(map[string]any)["stop_reason"].(string)
		}
	}
	if toolName != "Bash" || !strings.HasPrefix(toolID, "toolu_") || stop != "tool_use" {
		t.Fatalf("tool %q id %q stop %q", toolName, toolID, stop)
	}
	if len(partial) < 3 {
		t.Errorf("input in %d chunks, want several", len(partial))
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(strings.Join(partial, "")), &got); err != nil || !reflect.DeepEqual(got, input) {
		t.Fatalf("reassembled input %v (%v)", got, err)
	}

	// Second leg: the client sends the history plus the tool_result.
	resp = post(t, context.Background(), s.URL()+"/v1/messages", msgBody(true,
		user("please run it"),
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": toolID, "name": "Bash", "input": input}}},
		user([]any{map[string]any{"type": "tool_result", "tool_use_id": toolID,
			"content": []any{map[string]any{"type": "text", "text": "round-trip"}}, "is_error": false}}),
	))
	evs = readSSE(t, resp.Body)
	resp.Body.Close()
	var text string
	for _, e := range evs {
		if d, ok := e.Data["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			text += d["text"].(string)
		}
	}
	if !strings.Contains(text, "Tool result: round-trip") {
		t.Errorf("second reply %q", text)
	}
	reqs := s.MessageRequests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if p := reqs[1].Prompt(); p != "please run it" {
		t.Errorf("prompt of the tool leg %q", p)
	}
	if tr := reqs[1].ToolResults(); len(tr) != 1 || tr[0].ToolUseID != toolID || tr[0].ResultText() != "round-trip" {
		t.Errorf("tool results %+v", tr)
	}
	if !strings.Contains(reqs[1].Transcript(), "assistant: tool_use Bash") {
		t.Errorf("transcript:\n%s", reqs[1].Transcript())
	}
}

func TestNonStreaming(t *testing.T) {
	s := fakeapi.New(t, fakeapi.ToolUse("Read", map[string]any{"file_path": "/x"}))
	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(false, user("hi")))
	defer resp.Body.Close()
	var m struct {
		ID, Type, Role, Model string
		StopReason            string `json:"stop_reason"`
		Content               []struct {
			Type, Text, Name, ID string
			Input                map[string]any
		}
		Usage map[string]any
	}
	if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || m.Type != "message" || m.Role != "assistant" || !strings.HasPrefix(m.ID, "msg_") ||
		m.StopReason != "tool_use" || len(m.Content) != 2 || m.Content[0].Text != "Running Read." ||
		m.Content[1].Name != "Read" || m.Content[1].Input["file_path"] != "/x" || m.Usage["output_tokens"] == nil {
		t.Fatalf("reply %+v", m)
	}
}

func TestCountTokensAndNotFound(t *testing.T) {
	s := fakeapi.New(t)
	resp := post(t, context.Background(), s.URL()+"/v1/messages/count_tokens", msgBody(false, user("count me")))
	var ct map[string]float64
	_ = json.NewDecoder(resp.Body).Decode(&ct)
	resp.Body.Close()
	if resp.StatusCode != 200 || ct["input_tokens"] < 1 {
		t.Errorf("count_tokens %d %v", resp.StatusCode, ct)
	}

	resp, err := http.Get(s.URL() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	checkError(t, resp, 404, "not_found_error")
}

func checkError(t *testing.T, resp *http.Response, status int, typ string) {
	t.Helper()
	defer resp.Body.Close()
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		RequestID string `json:"request_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != status || e.Type != "error" || e.Error.Type != typ || e.Error.Message == "" ||
		!strings.HasPrefix(e.RequestID, "req_") || resp.Header.Get("request-id") != e.RequestID {
		t.Errorf("got %d %+v, want %d %s", resp.StatusCode, e, status, typ)
	}
}

func TestErrors(t *testing.T) {
	s := fakeapi.New(t,
		fakeapi.When("bad", fakeapi.Error(400, "invalid_request_error", "fake: scripted failure")),
		fakeapi.When("busy", fakeapi.Error(529, "overloaded_error", "Overloaded")),
	)
	checkError(t, post(t, context.Background(), s.URL()+"/v1/messages", msgBody(true, user("bad"))), 400, "invalid_request_error")
	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(true, user("busy")))
	if resp.Header.Get("x-should-retry") != "true" {
		t.Error("529 without x-should-retry")
	}
	checkError(t, resp, 529, "overloaded_error")

	checkError(t, fakehttp.Post(t, t.Context(), s.URL()+"/v1/messages", "{not json", nil), 400, "invalid_request_error")
}

func TestSequenceAndDefault(t *testing.T) {
	s := fakeapi.New(t,
		fakeapi.When("flaky", fakeapi.Sequence(fakeapi.Error(529, "overloaded_error", "Overloaded"), fakeapi.Text("ok"))),
	)
	checkError(t, post(t, context.Background(), s.URL()+"/v1/messages", msgBody(false, user("flaky"))), 529, "overloaded_error")
	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(false, user("flaky")))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"text":"ok"`) {
		t.Errorf("second: %d %s", resp.StatusCode, b)
	}
	resp = post(t, context.Background(), s.URL()+"/v1/messages", msgBody(false, user("unknown")))
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "no scenario") {
		t.Errorf("default: %s", b)
	}
}

func TestSlowCancel(t *testing.T) {
	s := fakeapi.New(t, fakeapi.Slow(100, 50*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	resp := post(t, ctx, s.URL()+"/v1/messages", msgBody(true, user("slow")))
	if err := fakehttp.AwaitLines(bufio.NewReader(resp.Body), "text_delta", 3); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("3 slow deltas took %s", d)
	}
	// Close must not wait for the abandoned stream.
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close blocked")
	}
}

func TestRecording(t *testing.T) {
	s := fakeapi.New(t)
	resp := post(t, context.Background(), s.URL()+"/v1/messages?beta=true", msgBody(false,
		user([]any{
			map[string]any{"type": "text", "text": "<system-reminder>ctx</system-reminder>"},
			map[string]any{"type": "text", "text": "first"},
		}),
		map[string]any{"role": "assistant", "content": "reply one"},
		user("second"),
	))
	resp.Body.Close()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/messages" || r.RawQuery != "beta=true" || !r.IsMessages() {
		t.Errorf("request line %s %s ? %s", r.Method, r.Path, r.RawQuery)
	}
	if r.Header.Get("x-api-key") != "" || r.Header.Get("anthropic-version") != "2023-06-01" {
		t.Errorf("headers %v", r.Header)
	}
	if r.Body.Model != "claude-test-1" || len(r.Body.Messages) != 3 || r.Prompt() != "second" {
		t.Errorf("body %+v prompt %q", r.Body, r.Prompt())
	}
	if got, want := r.Transcript(), "user: first\nassistant: reply one\nuser: second\n"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

// TestNetnsNoRouteOut runs inside the loopback-only namespace the e2e tests
// use: only lo exists, a connect to a public address fails locally, and the
// fake on 127.0.0.1 is reachable.
func TestNetnsNoRouteOut(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	if err := providertest.CheckNoRouteOut(); err != nil {
		t.Fatal(err)
	}
	s := fakeapi.New(t, fakeapi.Text("inside"))
	resp := post(t, context.Background(), s.URL()+"/v1/messages", msgBody(false, user("x")))
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "inside") {
		t.Errorf("loopback reply %s", b)
	}
}
