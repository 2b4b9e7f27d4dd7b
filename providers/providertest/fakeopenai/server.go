// Package fakeopenai is a scripted fake LLM server for the end-to-end tests of
// the agent CLIs that talk to an OpenAI-compatible or a Gemini API: opencode,
// qwen and pi (Chat Completions) and gemini (Gemini API). It listens on
// 127.0.0.1 only, records every request and picks each reply from a list of
// Scripts, usually keyed on the last user text (see When).
//
// OpenAI shape:
//
//	GET  /v1/models
//	POST /v1/chat/completions   SSE ("data: {chunk}" … "data: [DONE]") when
//	                            "stream":true, JSON otherwise
//
// Streamed chunks: the role, reasoning_content deltas, content deltas,
// tool_calls deltas (id and name first, then the arguments in pieces), the
// finish_reason, a usage chunk when stream_options.include_usage is set, and
// [DONE]. Errors are {"error":{"message","type","code"}} with the status.
//
// Gemini shape (for GOOGLE_GEMINI_BASE_URL):
//
//	GET  /v1beta/models
//	POST /v1beta/models/<model>:streamGenerateContent?alt=sse
//	POST /v1beta/models/<model>:generateContent
//	POST /v1beta/models/<model>:countTokens
//
// Both shapes share the scripts: a request is normalized into Request
// (messages, tools, tool results) before a script sees it.
package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// DefaultModel is the model id the fake lists and echoes by default.
const DefaultModel = "fake-model"

// Server is a running fake. URL is the base URL, e.g.
// http://127.0.0.1:41234: the OpenAI base URL a client wants is URL()+"/v1",
// the Gemini base URL is URL(). Requests returns every recorded request, in
// arrival order.
type Server struct {
	*fakehttp.Scripted[Request, Script]
}

// New starts a fake on 127.0.0.1:0. log may be nil; when it is a testing.TB
// (anything with Cleanup) the server is closed at cleanup.
func New(log fakehttp.Logger, scripts ...Script) *Server {
	return fakehttp.Start("fakeopenai", log, scripts, func(s *fakehttp.Scripted[Request, Script]) *Server { return &Server{s} })
}

// ChatRequests returns the recorded chat requests that offered tools: the
// agent's own turns, without side calls such as title generation.
func (s *Server) ChatRequests() []Request {
	return s.RequestsWhere(func(r Request) bool { return r.IsChat() && r.HasTools() })
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Recorded: fakehttp.ReadRequest(r, "Authorization", "X-Api-Key", "X-Goog-Api-Key", "Proxy-Authorization", "Cookie")}
	q := r.URL.Query()
	q.Del("key")
	rec.RawQuery = q.Encode()

	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && (path == "/v1/models" || path == "/models"):
		s.record(&rec)
		writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{
			map[string]any{"id": DefaultModel, "object": "model", "created": 0, "owned_by": "fakeopenai"},
		}})
	case r.Method == http.MethodPost && (path == "/v1/chat/completions" || path == "/chat/completions"):
		rec.API = APIOpenAI
		err := rec.decodeOpenAI()
		s.record(&rec)
		if err != nil || len(rec.Raw) == 0 {
			writeOpenAIError(w, &APIError{Status: http.StatusBadRequest, Message: fmt.Sprintf("invalid request body: %v", err)})
			return
		}
		s.chat(w, r.Context(), &rec)
	case strings.HasPrefix(path, "/v1beta/models") || strings.HasPrefix(path, "/v1/models/"):
		s.gemini(w, r, &rec)
	default:
		s.record(&rec)
		writeOpenAIError(w, &APIError{Status: http.StatusNotFound, Message: "fakeopenai: no route for " + r.Method + " " + path})
	}
}

func (s *Server) record(rec *Request) {
	s.Record(*rec)
	s.Logf("%s %s api=%s stream=%v tools=%d last_user=%q", rec.Method, rec.Path, rec.API, rec.Stream, len(rec.Tools), fakehttp.Clip(rec.LastUserText(), 80))
}

// reply picks the reply for req.
func (s *Server) reply(req *Request) *Reply {
	if r := fakehttp.Pick(s.Scripts, req); r != nil {
		return r
	}
	if !req.HasTools() {
		return TextReply("Fake title")
	}
	return TextReply(fakehttp.NoScenario(req.LastUserText())...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeOpenAIError(w http.ResponseWriter, e *APIError) {
	typ := "invalid_request_error"
	if e.Status >= 500 {
		typ = "server_error"
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{"message": e.Message, "type": typ, "code": e.Status}})
}

// usage is the reply's token accounting.
func usage(req *Request, rep *Reply) (in, out int) {
	in, out = rep.InputTokens, rep.OutputTokens
	if in == 0 {
		in = fakehttp.Tokens(req.Raw)
	}
	if out == 0 {
		out = len(rep.Text) + len(rep.Reasoning) + 3*len(rep.ToolCalls) + 1
	}
	return in, out
}

// chat answers one Chat Completions request.
func (s *Server) chat(w http.ResponseWriter, ctx context.Context, req *Request) {
	rep := s.reply(req)
	if rep.Err != nil {
		writeOpenAIError(w, rep.Err)
		return
	}
	model := req.Model
	if model == "" {
		model = DefaultModel
	}
	id := fakehttp.NewID("chatcmpl")
	created := time.Now().Unix()
	in, out := usage(req, rep)
	usageObj := map[string]any{"prompt_tokens": in, "completion_tokens": out, "total_tokens": in + out}

	if !req.Stream {
		if !fakehttp.Sleep(ctx, rep.Delay) {
			return
		}
		msg := map[string]any{"role": "assistant", "content": strings.Join(rep.Text, "")}
		if len(rep.Reasoning) > 0 {
			msg["reasoning_content"] = strings.Join(rep.Reasoning, "")
		}
		if len(rep.ToolCalls) > 0 {
			calls := make([]map[string]any, len(rep.ToolCalls))
			for i, c := range rep.ToolCalls {
				calls[i] = map[string]any{"id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
			}
			msg["tool_calls"] = calls
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": rep.finishReason()}},
			"usage":   usageObj,
		})
		return
	}

	sse := fakehttp.NewSSE(w, ctx)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	delta := func(d map[string]any) bool {
		return fakehttp.Sleep(ctx, rep.Delay) && sse.Data(chunk(d, nil))
	}
	if !sse.Data(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, c := range rep.Reasoning {
		if !delta(map[string]any{"reasoning_content": c}) {
			return
		}
	}
	for _, c := range rep.Text {
		if !delta(map[string]any{"content": c}) {
			return
		}
	}
	for i, c := range rep.ToolCalls {
		head := map[string]any{"index": i, "id": c.ID, "type": "function", "function": map[string]any{"name": c.Name, "arguments": ""}}
		if !delta(map[string]any{"tool_calls": []any{head}}) {
			return
		}
		for _, a := range argChunks(c.Arguments) {
			if !delta(map[string]any{"tool_calls": []any{map[string]any{"index": i, "function": map[string]any{"arguments": a}}}}) {
				return
			}
		}
	}
	if !sse.Data(chunk(map[string]any{}, rep.finishReason())) {
		return
	}
	if req.IncludeUsage {
		u := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model, "choices": []any{}, "usage": usageObj}
		if !sse.Data(u) {
			return
		}
	}
	sse.Raw("[DONE]")
}
