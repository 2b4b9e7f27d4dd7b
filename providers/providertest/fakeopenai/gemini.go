// The Gemini-API-shaped shim (gemini CLI via GOOGLE_GEMINI_BASE_URL).

package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// GeminiModel is the model id the Gemini shim lists.
const GeminiModel = "gemini-2.5-flash"

func (s *Server) gemini(w http.ResponseWriter, r *http.Request, rec *Request) {
	rec.API = APIGemini
	rest := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1beta"), "/v1")
	rest = strings.TrimPrefix(rest, "/models")
	if r.Method == http.MethodGet && (rest == "" || rest == "/") {
		s.record(rec)
		writeJSON(w, http.StatusOK, map[string]any{"models": []any{map[string]any{
			"name": "models/" + GeminiModel, "displayName": "Fake Gemini", "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
			"supportedGenerationMethods": []string{"generateContent", "countTokens"},
		}}})
		return
	}
	model, action, ok := strings.Cut(strings.TrimPrefix(rest, "/"), ":")
	if !ok || r.Method != http.MethodPost {
		s.record(rec)
		writeGeminiError(w, &APIError{Status: http.StatusNotFound, Message: "fakeopenai: no route for " + r.Method + " " + r.URL.Path})
		return
	}
	stream := action == "streamGenerateContent"
	err := rec.decodeGemini(model, stream)
	s.record(rec)
	if err != nil || len(rec.Raw) == 0 {
		writeGeminiError(w, &APIError{Status: http.StatusBadRequest, Message: fmt.Sprintf("invalid request body: %v", err)})
		return
	}
	switch action {
	case "countTokens":
		in, _ := usage(rec, &Reply{})
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": in})
	case "generateContent", "streamGenerateContent":
		s.generate(w, r, rec, model, stream)
	default:
		writeGeminiError(w, &APIError{Status: http.StatusNotFound, Message: "fakeopenai: unknown action " + action})
	}
}

func writeGeminiError(w http.ResponseWriter, e *APIError) {
	status := "INVALID_ARGUMENT"
	switch {
	case e.Status == http.StatusNotFound:
		status = "NOT_FOUND"
	case e.Status == http.StatusTooManyRequests:
		status = "RESOURCE_EXHAUSTED"
	case e.Status >= 500:
		status = "INTERNAL"
	}
	writeJSON(w, e.Status, map[string]any{"error": map[string]any{"code": e.Status, "message": e.Message, "status": status}})
}

// generate answers generateContent / streamGenerateContent. Streaming uses SSE
// with alt=sse and a JSON array otherwise, like the real API.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, req *Request, model string, stream bool) {
	rep := s.reply(req)
	if rep.Err != nil {
		writeGeminiError(w, rep.Err)
		return
	}
	ctx := r.Context()
	respID := fakehttp.NewID("resp")
	in, out := usage(req, rep)
	candidate := func(parts []map[string]any, finish string) map[string]any {
		c := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		if finish != "" {
			c["finishReason"] = finish
		}
		return map[string]any{"candidates": []any{c}, "modelVersion": model, "responseId": respID}
	}
	withUsage := func(m map[string]any) map[string]any {
		m["usageMetadata"] = map[string]any{"promptTokenCount": in, "candidatesTokenCount": out, "totalTokenCount": in + out}
		return m
	}
	callParts := func() []map[string]any {
		parts := make([]map[string]any, 0, len(rep.ToolCalls))
		for _, c := range rep.ToolCalls {
			var args json.RawMessage = []byte(c.Arguments)
			if !json.Valid(args) {
				args = []byte("{}")
			}
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": c.Name, "args": args}})
		}
		return parts
	}

	if !stream {
		if !fakehttp.Sleep(ctx, rep.Delay) {
			return
		}
		var parts []map[string]any
		if len(rep.Reasoning) > 0 {
			parts = append(parts, map[string]any{"text": strings.Join(rep.Reasoning, ""), "thought": true})
		}
		if len(rep.Text) > 0 {
			parts = append(parts, map[string]any{"text": strings.Join(rep.Text, "")})
		}
		parts = append(parts, callParts()...)
		writeJSON(w, http.StatusOK, withUsage(candidate(parts, "STOP")))
		return
	}

	var chunks []map[string]any
	for _, c := range rep.Reasoning {
		chunks = append(chunks, candidate([]map[string]any{{"text": c, "thought": true}}, ""))
	}
	for _, c := range rep.Text {
		chunks = append(chunks, candidate([]map[string]any{{"text": c}}, ""))
	}
	final := callParts()
	if len(final) == 0 {
		final = []map[string]any{{"text": ""}}
	}
	chunks = append(chunks, withUsage(candidate(final, "STOP")))

	if r.URL.Query().Get("alt") == "sse" {
		sse := fakehttp.NewSSE(w, ctx)
		for i, c := range chunks {
			if i > 0 && !fakehttp.Sleep(ctx, rep.Delay) {
				return
			}
			if !sse.Data(c) {
				return
			}
		}
		return
	}
	// Without alt=sse the API streams one JSON array.
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i, c := range chunks {
		if i > 0 && !fakehttp.Sleep(ctx, rep.Delay) {
			return
		}
		b, _ := json.Marshal(c)
		sep := ","
		if i == 0 {
			sep = "["
		}
		if _, err := fmt.Fprintf(w, "%s%s\n", sep, b); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
	_, _ = w.Write([]byte("]\n"))
}
