// Requests as codex sends them, and the scripts that answer them.

package fakeresponses

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Request is one recorded POST /v1/responses (the Authorization header is
// dropped; HasAuth says whether a bearer token was sent).
type Request struct {
	fakehttp.Recorded
	Body    Body
	HasAuth bool
}

// Body is the part of the request body the tests look at.
type Body struct {
	Model  string            `json:"model"`
	Stream bool              `json:"stream"`
	Input  []InputItem       `json:"input"`
	Tools  []json.RawMessage `json:"tools"`
}

// InputItem is one input item: a message, a function call or its output.
type InputItem struct {
	Type      string        `json:"type"`
	Role      string        `json:"role"`
	Content   []ContentPart `json:"content"`
	CallID    string        `json:"call_id"`
	Name      string        `json:"name"`
	Arguments string        `json:"arguments"`
	Output    any           `json:"output"`
}

// ContentPart is input_text / output_text content.
type ContentPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (it InputItem) text() string {
	var parts []string
	for _, c := range it.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "")
}

// OutputText is a function_call_output's output as text.
func (it InputItem) OutputText() string { return textOrJSON(it.Output, "") }

// userMessages are the user's own messages (without codex's injected
// context such as <environment_context>).
func (r *Request) userMessages() []string {
	var out []string
	for _, it := range r.Body.Input {
		if it.Type == "message" && it.Role == "user" {
			t := it.text()
			if strings.HasPrefix(strings.TrimSpace(t), "<") {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// Prompt is the text of the last user message.
func (r *Request) Prompt() string {
	m := r.userMessages()
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1]
}

// FunctionOutputs are the function_call_output items after the last user
// message (the results of this turn's tool calls).
func (r *Request) FunctionOutputs() []InputItem {
	var out []InputItem
	for _, it := range r.Body.Input {
		switch {
		case it.Type == "message" && it.Role == "user" && !strings.HasPrefix(strings.TrimSpace(it.text()), "<"):
			out = nil
		case it.Type == "function_call_output":
			out = append(out, it)
		}
	}
	return out
}

// Transcript renders the user and assistant messages as "role: text" lines.
func (r *Request) Transcript() string {
	var b strings.Builder
	for _, it := range r.Body.Input {
		if it.Type != "message" || (it.Role != "user" && it.Role != "assistant") {
			continue
		}
		t := it.text()
		if strings.HasPrefix(strings.TrimSpace(t), "<") {
			continue
		}
		b.WriteString(it.Role + ": " + t + "\n")
	}
	return b.String()
}

// ToolNames lists the names of the tools offered.
func (r *Request) ToolNames() []string {
	var out []string
	for _, t := range r.Body.Tools {
		var v struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		_ = json.Unmarshal(t, &v)
		name := v.Name
		if name == "" {
			name = v.Type
		}
		out = append(out, name)
	}
	return out
}

// Script answers one request, or returns nil when it is not its business
// (the server then asks the next script).
type Script func(req *Request) *Reply

// Reply is one response stream, or an error reply.
type Reply struct {
	Items []Item
	// Err makes the reply an HTTP error with a JSON body.
	Err *APIError
	// Delay is slept before every text or reasoning delta; it ends early
	// when the client goes away.
	Delay time.Duration
	Model string
}

// Item is one output item: "message" (Chunks are the text deltas),
// "reasoning" (Chunks are summary deltas) or "function_call".
type Item struct {
	Type      string
	Chunks    []string
	Name      string
	Namespace string // a function_call's namespace tool, if any
	CallID    string
	Arguments any // marshalled unless it is a string
}

func (it Item) argsJSON() string { return textOrJSON(it.Arguments, "{}") }

// textOrJSON is v as it is when a string, none when nil, else v marshalled.
func textOrJSON(v any, none string) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return none
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("fakeresponses: %T: %v", v, err))
	}
	return string(b)
}

// APIError is an HTTP error reply.
type APIError struct {
	Status  int
	Type    string
	Message string
}

// TextReply is a reply of one message streamed as chunks.
func TextReply(chunks ...string) *Reply {
	return &Reply{Items: []Item{{Type: "message", Chunks: chunks}}}
}

// Text always answers with text streamed as chunks.
func Text(chunks ...string) Script {
	return func(*Request) *Reply { return TextReply(chunks...) }
}

// Thinking answers with a reasoning summary, then text.
func Thinking(reasoning []string, text ...string) Script {
	return func(*Request) *Reply {
		return &Reply{Items: []Item{{Type: "reasoning", Chunks: reasoning}, {Type: "message", Chunks: text}}}
	}
}

// ToolCall is a two-phase script: without a function output in the turn it
// calls tool name with args; once the output comes back it answers
// "Done. Tool output was: <output>" (chunked), so a test can check the round
// trip.
func ToolCall(name string, args any) Script {
	return func(req *Request) *Reply {
		if outs := req.FunctionOutputs(); len(outs) > 0 {
			var b strings.Builder
			for _, o := range outs {
				b.WriteString(o.OutputText())
			}
			out := b.String()
			half := len(out) / 2
			return TextReply("Done. ", "Tool output was: ", out[:half], out[half:])
		}
		return &Reply{Items: []Item{{Type: "function_call", Name: name, Arguments: args}}}
	}
}

// Shell calls the exec_command tool with cmd (see ToolCall).
func Shell(cmd string) Script {
	return ToolCall("exec_command", map[string]any{"cmd": cmd, "workdir": nil, "yield_time_ms": 2000})
}

// Question is one request_user_input question.
type Question struct {
	ID       string   `json:"id"`
	Header   string   `json:"header"`
	Question string   `json:"question"`
	Options  []Option `json:"options"`
}

// Option is a question's choice.
type Option struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// AskUser calls request_user_input (offered in Plan mode only) with qs.
func AskUser(qs ...Question) Script {
	return ToolCall("request_user_input", map[string]any{"questions": qs})
}

// Slow streams n text deltas "word00 ", "word01 ", ... with delay before each.
func Slow(n int, delay time.Duration) Script {
	return func(*Request) *Reply {
		r := TextReply(fakehttp.Words(n)...)
		r.Delay = delay
		return r
	}
}

// Error answers with an HTTP error, e.g. Error(400, "fake: bad").
func Error(status int, msg string) Script {
	return func(*Request) *Reply {
		return &Reply{Err: &APIError{Status: status, Type: "invalid_request_error", Message: msg}}
	}
}

// When routes to s the requests whose user messages contain substr.
func When(substr string, s Script) Script {
	return func(req *Request) *Reply {
		for _, m := range req.userMessages() {
			if strings.Contains(m, substr) {
				if r := s(req); r != nil {
					return r
				}
			}
		}
		return nil
	}
}

// WhenLast routes to s the requests whose last user message contains substr.
func WhenLast(substr string, s Script) Script {
	return fakehttp.When((*Request).Prompt, substr, s)
}

// Sequence answers the i-th request it sees with scripts[i] (the last repeats).
func Sequence(scripts ...Script) Script { return fakehttp.Sequence(scripts...) }
