// Package fakeresponses is a scripted fake of the OpenAI Responses API for
// end-to-end tests of the Codex app-server harness. It listens on 127.0.0.1
// only, answers POST /v1/responses with an SSE stream in the shape codex-cli
// 0.169.0 consumes (response.created, output_item.added, content_part.added,
// output_text.delta, function_call_arguments.delta, reasoning summary deltas,
// output_item.done, response.completed with usage), records every request,
// and picks each reply from a list of Scripts (usually keyed on the prompt
// text, see When). CodexHome writes a CODEX_HOME whose config.toml points
// the model provider at the fake and turns off everything that would reach
// the network at startup.
package fakeresponses

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/providers/codexharness"
	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Server is a running fake Responses API. URL is the server's root, e.g.
// http://127.0.0.1:41234; Requests returns every recorded POST /v1/responses,
// in order.
type Server struct {
	*fakehttp.Scripted[Request, Script]
}

// New starts a fake on 127.0.0.1:0. log may be nil; when it is a testing.TB
// the server is closed at cleanup.
func New(log fakehttp.Logger, scripts ...Script) *Server {
	return fakehttp.Start("fakeresponses", log, scripts, func(s *fakehttp.Scripted[Request, Script]) *Server { return &Server{s} })
}

// BaseURL is the model provider base_url (codex POSTs <base_url>/responses).
func (s *Server) BaseURL() string { return s.URL() + "/v1" }

// APIKeyEnv is the variable the provider config reads the (dummy) key from.
const APIKeyEnv = "FAKE_API_KEY"

// ProviderID is the model provider id in the generated config.
const ProviderID = "fake"

// ConfigTOML is a CODEX_HOME config.toml for model on this server: the
// custom provider, no retries (a scripted error fails at once), and
// plugins, remote plugins, apps, analytics and update checks off so that
// nothing but the provider's base_url is contacted.
func (s *Server) ConfigTOML(model string) string {
	return codexharness.ProviderConfig{
		Model: model, ID: ProviderID, Name: "Fake Responses", BaseURL: s.BaseURL(), EnvKey: APIKeyEnv, NoRetries: true,
	}.TOML()
}

// CodexHome creates dir/codex-home with ConfigTOML(model) and returns it with
// the child environment for it: CODEX_HOME, HOME and XDG dirs under dir, the
// dummy key and no proxy for loopback.
func (s *Server) CodexHome(dir, model string) (string, map[string]string, error) {
	home := filepath.Join(dir, "codex-home")
	userHome := filepath.Join(dir, "home")
	for _, d := range []string{home, userHome} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(s.ConfigTOML(model)), 0o600); err != nil {
		return "", nil, err
	}
	env := map[string]string{
		"HOME":            userHome,
		"XDG_CONFIG_HOME": filepath.Join(userHome, ".config"),
		"XDG_CACHE_HOME":  filepath.Join(userHome, ".cache"),
		"XDG_DATA_HOME":   filepath.Join(userHome, ".local", "share"),
		"XDG_STATE_HOME":  filepath.Join(userHome, ".local", "state"),
		APIKeyEnv:         "dummy-key",
		"NO_PROXY":        "127.0.0.1,localhost",
		"no_proxy":        "127.0.0.1,localhost",
		"RUST_LOG":        "warn",
	}
	return home, env, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Recorded: fakehttp.ReadRequest(r, "Authorization", "Cookie"),
		HasAuth: strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ")}
	_ = json.Unmarshal(rec.Raw, &rec.Body)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		s.Logf("%s %s: not found", r.Method, r.URL.Path)
		http.NotFound(w, r)
		return
	}
	s.Record(rec)
	s.Logf("POST %s model=%s prompt=%q inputs=%d", r.URL.Path, rec.Body.Model, fakehttp.Clip(rec.Prompt(), 80), len(rec.Body.Input))

	reply := fakehttp.Pick(s.Scripts, &rec)
	if reply == nil {
		reply = TextReply("No scenario for this prompt.")
	}
	if reply.Err != nil {
		writeError(w, reply.Err)
		return
	}
	s.stream(r.Context(), w, rec.Body.Model, reply)
}

func writeError(w http.ResponseWriter, e *APIError) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.Status)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type, "param": nil, "code": "fake_error"}})
	_, _ = w.Write(b)
}

// sse writes the Responses events, numbered, until the stream breaks.
type sse struct {
	*fakehttp.SSE
	n       int
	stopped bool
}

func (e *sse) send(typ string, fields map[string]any) {
	if e.stopped {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = e.n
	e.n++
	e.stopped = !e.Event(typ, fields)
}

func (s *Server) stream(ctx context.Context, w http.ResponseWriter, model string, reply *Reply) {
	if reply.Model != "" {
		model = reply.Model
	}
	w.Header().Set("Content-Type", "text/event-stream")
	e := &sse{SSE: fakehttp.NewSSE(w, ctx)}
	respID := fakehttp.NewID("resp")
	base := map[string]any{"id": respID, "object": "response", "created_at": time.Now().Unix(), "model": model, "status": "in_progress", "output": []any{}}
	e.send("response.created", map[string]any{"response": base})
	wait := func() bool { return fakehttp.Sleep(ctx, reply.Delay) }
	var output []any
	for i, it := range reply.Items {
		var done map[string]any
		switch it.Type {
		case "reasoning":
			id := fakehttp.NewID("rs")
			e.send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": id, "type": "reasoning", "summary": []any{}}})
			e.send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": ""}})
			for _, c := range it.Chunks {
				if !wait() {
					return
				}
				e.send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "delta": c})
			}
			text := strings.Join(it.Chunks, "")
			e.send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "text": text})
			e.send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": 0, "part": map[string]any{"type": "summary_text", "text": text}})
			done = map[string]any{"id": id, "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": text}}}
		case "function_call":
			id, callID := fakehttp.NewID("fc"), it.CallID
			if callID == "" {
				callID = fakehttp.NewID("call")
			}
			args := it.argsJSON()
			added := map[string]any{"id": id, "type": "function_call", "status": "in_progress", "call_id": callID, "name": it.Name, "arguments": ""}
			if it.Namespace != "" {
				added["namespace"] = it.Namespace
			}
			e.send("response.output_item.added", map[string]any{"output_index": i, "item": added})
			half := len(args) / 2
			for _, c := range []string{args[:half], args[half:]} {
				e.send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			e.send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
			done = map[string]any{"id": id, "type": "function_call", "status": "completed", "call_id": callID, "name": it.Name, "arguments": args}
			if it.Namespace != "" {
				done["namespace"] = it.Namespace
			}
		default: // message
			id := fakehttp.NewID("msg")
			e.send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			e.send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, c := range it.Chunks {
				if !wait() {
					return
				}
				e.send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": c})
			}
			text := strings.Join(it.Chunks, "")
			part := map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
			e.send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text})
			e.send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
			done = map[string]any{"id": id, "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
		}
		e.send("response.output_item.done", map[string]any{"output_index": i, "item": done})
		output = append(output, done)
	}
	final := map[string]any{"id": respID, "object": "response", "created_at": base["created_at"], "model": model, "status": "completed", "output": output,
		"usage": map[string]any{
			"input_tokens": 120, "input_tokens_details": map[string]any{"cached_tokens": 20},
			"output_tokens": 12, "output_tokens_details": map[string]any{"reasoning_tokens": 3}, "total_tokens": 132,
		}}
	e.send("response.completed", map[string]any{"response": final})
	if err := e.Err(); err != nil && !errors.Is(err, context.Canceled) {
		s.Logf("stream: %v", err)
	}
}
