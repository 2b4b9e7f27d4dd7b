// Package fakeapi is a scripted fake of the Anthropic Messages API for tests of
// the Claude Code provider. It listens on 127.0.0.1 only, answers
// POST /v1/messages (SSE when "stream":true, JSON otherwise) and
// POST /v1/messages/count_tokens, records every request, and picks each reply
// from a list of Scripts (usually keyed on the prompt text, see When).
//
// It also carries the loopback-only network namespace harness (netns.go) under
// which the real CLI is run.
package fakeapi

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Server is a running fake API. URL is the base URL, e.g.
// http://127.0.0.1:41234 (for ANTHROPIC_BASE_URL); Requests returns every
// recorded request, in arrival order.
type Server struct {
	*fakehttp.Scripted[Request, Script]
}

// New starts a fake API on 127.0.0.1:0. log may be nil; when it is a
// testing.TB (anything with Cleanup) the server is closed at cleanup.
func New(log fakehttp.Logger, scripts ...Script) *Server {
	return fakehttp.Start("fakeapi", log, scripts, func(s *fakehttp.Scripted[Request, Script]) *Server { return &Server{s} })
}

// MessageRequests returns the recorded POST /v1/messages requests.
func (s *Server) MessageRequests() []Request {
	return s.RequestsWhere(func(r Request) bool { return r.IsMessages() })
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Recorded: fakehttp.ReadRequest(r, "X-Api-Key", "Authorization", "Proxy-Authorization", "Cookie")}
	parseErr := json.Unmarshal(rec.Raw, &rec.Body)
	if len(rec.Raw) == 0 {
		parseErr = errors.New("empty body")
	}
	s.Record(rec)
	s.Logf("%s %s stream=%v prompt=%q", r.Method, r.URL.RequestURI(), rec.Body.Stream, fakehttp.Clip(rec.Prompt(), 80))

	reqID := newID("req")
	w.Header().Set("request-id", reqID)

	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		if parseErr != nil {
			writeError(w, reqID, &APIError{Status: 400, Type: "invalid_request_error", Message: "invalid request body: " + parseErr.Error()})
			return
		}
		s.messages(w, r.Context(), &rec, reqID)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		if parseErr != nil {
			writeError(w, reqID, &APIError{Status: 400, Type: "invalid_request_error", Message: "invalid request body: " + parseErr.Error()})
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": fakehttp.Tokens(rec.Raw)})
	default:
		writeError(w, reqID, &APIError{Status: 404, Type: "not_found_error", Message: "Not found"})
	}
}

func (s *Server) reply(req *Request) *Reply {
	if r := fakehttp.Pick(s.Scripts, req); r != nil {
		return r
	}
	return TextReply(fakehttp.NoScenario(req.Prompt())...)
}

func writeError(w http.ResponseWriter, reqID string, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	if e.Status == 529 || e.Status == 429 || e.Status >= 500 {
		w.Header().Set("x-should-retry", "true")
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(errorBody(reqID, e))
}

func errorBody(reqID string, e *APIError) map[string]any {
	return map[string]any{
		"type":       "error",
		"error":      map[string]any{"type": e.Type, "message": e.Message},
		"request_id": reqID,
	}
}

func (s *Server) messages(w http.ResponseWriter, ctx context.Context, req *Request, reqID string) {
	rep := s.reply(req)
	if rep.Err != nil {
		writeError(w, reqID, rep.Err)
		return
	}
	model := rep.Model
	if model == "" {
		model = req.Body.Model
	}
	if model == "" {
		model = "claude-fake"
	}
	msgID := newID("msg")
	inTokens := fakehttp.Tokens(req.Raw)
	outTokens := 0
	for _, b := range rep.Blocks {
		outTokens += len(b.Chunks) + 1
	}
	startUsage := map[string]any{
		"input_tokens": inTokens, "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard",
	}

	if !req.Body.Stream {
		if !fakehttp.Sleep(ctx, rep.Delay) {
			return
		}
		content := make([]map[string]any, 0, len(rep.Blocks))
		for _, b := range rep.Blocks {
			content = append(content, fullBlock(b))
		}
		usage := startUsage
		usage["output_tokens"] = outTokens
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": content, "stop_reason": rep.stopReason(), "stop_sequence": nil,
			"usage": usage,
		})
		return
	}

	send := fakehttp.NewSSE(w, ctx).Event
	delta := func(i int, d map[string]any) bool {
		if !fakehttp.Sleep(ctx, rep.Delay) {
			return false
		}
		return send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
	}

	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage,
	}}) {
		return
	}
	if !send("ping", map[string]any{"type": "ping"}) {
		return
	}
	for i, b := range rep.Blocks {
		var start map[string]any
		switch b.Type {
		case "text":
			start = map[string]any{"type": "text", "text": ""}
		case "thinking":
			start = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
		case "tool_use":
			start = map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": map[string]any{}}
		default:
			panic("fakeapi: unknown block type " + b.Type)
		}
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": start}) {
			return
		}
		switch b.Type {
		case "text":
			for _, c := range b.Chunks {
				if !delta(i, map[string]any{"type": "text_delta", "text": c}) {
					return
				}
			}
		case "thinking":
			for _, c := range b.Chunks {
				if !delta(i, map[string]any{"type": "thinking_delta", "thinking": c}) {
					return
				}
			}
			if !delta(i, map[string]any{"type": "signature_delta", "signature": b.Signature}) {
				return
			}
		case "tool_use":
			for _, c := range b.inputChunks() {
				if !delta(i, map[string]any{"type": "input_json_delta", "partial_json": c}) {
					return
				}
			}
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !send("message_delta", map[string]any{
		"type":  "message_delta",
		"delta": map[string]any{"stop_reason": rep.stopReason(), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": outTokens},
	}) {
		return
	}
	send("message_stop", map[string]any{"type": "message_stop"})
}

func fullBlock(b ReplyBlock) map[string]any {
	switch b.Type {
	case "text":
		return map[string]any{"type": "text", "text": strings.Join(b.Chunks, "")}
	case "thinking":
		return map[string]any{"type": "thinking", "thinking": strings.Join(b.Chunks, ""), "signature": b.Signature}
	case "tool_use":
		return map[string]any{"type": "tool_use", "id": b.ID, "name": b.Name, "input": json.RawMessage(b.inputJSON())}
	}
	panic("fakeapi: unknown block type " + b.Type)
}
