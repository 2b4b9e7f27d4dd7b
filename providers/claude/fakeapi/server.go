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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Logger is what the server logs to; testing.TB satisfies it.
type Logger interface {
	Logf(format string, args ...any)
}

// Server is a running fake API.
type Server struct {
	log     Logger
	scripts []Script
	ln      net.Listener
	srv     *http.Server
	url     string

	mu     sync.Mutex
	reqs   []Request
	closed bool

	closeOnce sync.Once
}

// New starts a fake API on 127.0.0.1:0. log may be nil; when it is a
// testing.TB (anything with Cleanup) the server is closed at cleanup.
func New(log Logger, scripts ...Script) *Server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeapi: listen: %v", err))
	}
	s := &Server{log: log, scripts: scripts, ln: ln, url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	if c, ok := log.(interface{ Cleanup(func()) }); ok {
		c.Cleanup(s.Close)
	}
	return s
}

// URL is the base URL, e.g. http://127.0.0.1:41234 (for ANTHROPIC_BASE_URL).
func (s *Server) URL() string { return s.url }

// Close stops the server and drops open connections (streams in progress end).
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		_ = s.srv.Close()
	})
}

// Requests returns a copy of every recorded request, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// MessageRequests returns the recorded POST /v1/messages requests.
func (s *Server) MessageRequests() []Request {
	var out []Request
	for _, r := range s.Requests() {
		if r.IsMessages() {
			out = append(out, r)
		}
	}
	return out
}

func (s *Server) logf(format string, args ...any) {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if s.log != nil && !closed {
		if h, ok := s.log.(interface{ Helper() }); ok {
			h.Helper()
		}
		s.log.Logf("fakeapi: "+format, args...)
	}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	h := r.Header.Clone()
	for _, k := range []string{"X-Api-Key", "Authorization", "Proxy-Authorization", "Cookie"} {
		h.Del(k)
	}
	rec := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: h, Raw: raw, Time: time.Now()}
	parseErr := json.Unmarshal(raw, &rec.Body)
	if len(raw) == 0 {
		parseErr = errors.New("empty body")
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	s.mu.Unlock()
	s.logf("%s %s stream=%v prompt=%q", r.Method, r.URL.RequestURI(), rec.Body.Stream, clip(rec.Prompt(), 80))

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
		_ = json.NewEncoder(w).Encode(map[string]any{"input_tokens": estimateTokens(raw)})
	default:
		writeError(w, reqID, &APIError{Status: 404, Type: "not_found_error", Message: "Not found"})
	}
}

func (s *Server) reply(req *Request) *Reply {
	for _, sc := range s.scripts {
		if r := sc(req); r != nil {
			return r
		}
	}
	return TextReply("fake: no scenario for ", fmt.Sprintf("%q", clip(req.Prompt(), 200)))
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
	inTokens := estimateTokens(req.Raw)
	outTokens := 0
	for _, b := range rep.Blocks {
		outTokens += len(b.Chunks) + 1
	}
	startUsage := map[string]any{
		"input_tokens": inTokens, "cache_creation_input_tokens": 0,
		"cache_read_input_tokens": 0, "output_tokens": 1, "service_tier": "standard",
	}

	if !req.Body.Stream {
		if !sleep(ctx, rep.Delay) {
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

	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	send := func(event string, data any) bool {
		j, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		var buf bytes.Buffer
		fmt.Fprintf(&buf, "event: %s\ndata: %s\n\n", event, j)
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return ctx.Err() == nil
	}
	delta := func(i int, d map[string]any) bool {
		if !sleep(ctx, rep.Delay) {
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

// sleep waits d or until ctx is done; it reports whether ctx is still alive.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func estimateTokens(raw []byte) int {
	return max(1, utf8.RuneCount(raw)/4)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
