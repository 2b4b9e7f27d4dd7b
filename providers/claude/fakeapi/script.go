package fakeapi

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Script answers one Messages request. It returns nil when the request is not
// its business; the server then asks the next script, and falls back to a
// short "no scenario" text reply.
type Script func(req *Request) *Reply

// Reply is what the fake sends back to one POST /v1/messages.
type Reply struct {
	// Err, when set, makes the reply an error response with Err.Status.
	Err *APIError
	// Blocks are the assistant content blocks, streamed in order.
	Blocks []ReplyBlock
	// StopReason defaults to "tool_use" when a block is a tool_use, else "end_turn".
	StopReason string
	// Delay is slept before every streamed delta (and before the non-streaming
	// body). The sleep ends early when the client goes away.
	Delay time.Duration
	// Model overrides the model echoed back (default: the request's model).
	Model string
}

// ReplyBlock is one assistant content block. Chunks are the streamed deltas:
// text for "text", thinking for "thinking", partial JSON for "tool_use" (when
// Chunks is empty for a tool_use, Input is marshalled and split).
type ReplyBlock struct {
	Type      string // "text", "thinking" or "tool_use"
	Chunks    []string
	Signature string // thinking only
	ID        string // tool_use only
	Name      string // tool_use only
	Input     any    // tool_use only
}

// APIError is an Anthropic error reply: {"type":"error","error":{"type","message"},"request_id"}.
type APIError struct {
	Status  int
	Type    string
	Message string
}

// Error implements error.
func (e *APIError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Type, e.Message) }

var idSeq atomic.Int64

func newID(prefix string) string {
	return fmt.Sprintf("%s_fake_%012d%04x", prefix, time.Now().UnixNano()%1e12, idSeq.Add(1)&0xffff)
}

// TextReply builds a reply of one text block streamed as the given chunks.
func TextReply(chunks ...string) *Reply {
	return &Reply{Blocks: []ReplyBlock{{Type: "text", Chunks: chunks}}}
}

// Text is a Script that always answers with text streamed as chunks.
func Text(chunks ...string) Script {
	return func(*Request) *Reply { return TextReply(chunks...) }
}

// Thinking is a Script that answers with a thinking block (chunks of thinking,
// then a signature_delta) followed by a text block.
func Thinking(thinking []string, text ...string) Script {
	return func(*Request) *Reply {
		return &Reply{Blocks: []ReplyBlock{
			{Type: "thinking", Chunks: thinking, Signature: "ZmFrZXNpZ25hdHVyZQ=="},
			{Type: "text", Chunks: text},
		}}
	}
}

// ToolUse is a two-phase Script. When the last user message carries no
// tool_result it answers with a short text and a tool_use of name/input
// (stop_reason tool_use). When the client comes back with the tool_result it
// answers with text containing the result: "Tool result: <content>" (or
// "Tool error: <content>" when is_error), so a test can assert the round trip.
func ToolUse(name string, input any) Script {
	return func(req *Request) *Reply {
		if res := req.ToolResults(); len(res) > 0 {
			var sb strings.Builder
			for _, r := range res {
				label := "Tool result: "
				if r.IsError {
					label = "Tool error: "
				}
				sb.WriteString(label + r.ResultText())
			}
			out := sb.String()
			half := len(out) / 2
			return TextReply("Done. ", out[:half], out[half:])
		}
		return &Reply{Blocks: []ReplyBlock{
			{Type: "text", Chunks: []string{"Running ", name, "."}},
			{Type: "tool_use", ID: newID("toolu"), Name: name, Input: input},
		}}
	}
}

// Call is a Script that always answers with a call of tool name with input
// (after a short text), whatever the conversation holds; with Sequence it
// scripts a turn of several calls.
func Call(name string, input any) Script {
	return func(*Request) *Reply {
		return &Reply{Blocks: []ReplyBlock{
			{Type: "text", Chunks: []string{"Calling ", name, "."}},
			{Type: "tool_use", ID: newID("toolu"), Name: name, Input: input},
		}}
	}
}

// Slow is a Script that streams n text deltas "word00 ", "word01 ", ... with
// delay before each; for cancel tests.
func Slow(n int, delay time.Duration) Script {
	return func(*Request) *Reply {
		r := TextReply(fakehttp.Words(n)...)
		r.Delay = delay
		return r
	}
}

// Error is a Script that answers with an Anthropic error reply, e.g.
// Error(400, "invalid_request_error", "bad") or Error(529, "overloaded_error", "Overloaded").
func Error(status int, typ, msg string) Script {
	return func(*Request) *Reply {
		return &Reply{Err: &APIError{Status: status, Type: typ, Message: msg}}
	}
}

// When routes to s the requests whose Prompt contains substr.
func When(substr string, s Script) Script {
	return fakehttp.When((*Request).Prompt, substr, s)
}

// Sequence answers the i-th request it sees with scripts[i] (the last one
// repeats). Useful for "fail once, then succeed".
func Sequence(scripts ...Script) Script { return fakehttp.Sequence(scripts...) }

// stopReason is the reply's effective stop_reason.
func (r *Reply) stopReason() string {
	if r.StopReason != "" {
		return r.StopReason
	}
	for _, b := range r.Blocks {
		if b.Type == "tool_use" {
			return "tool_use"
		}
	}
	return "end_turn"
}

// inputJSON is a tool_use block's full input JSON.
func (b ReplyBlock) inputJSON() []byte {
	if len(b.Chunks) > 0 {
		return []byte(strings.Join(b.Chunks, ""))
	}
	if b.Input == nil {
		return []byte("{}")
	}
	j, err := json.Marshal(b.Input)
	if err != nil {
		panic(fmt.Sprintf("fakeapi: tool input: %v", err))
	}
	return j
}

// inputChunks splits a tool_use input into partial_json deltas; like the real
// API the first delta is empty.
func (b ReplyBlock) inputChunks() []string {
	if len(b.Chunks) > 0 {
		return b.Chunks
	}
	return append([]string{""}, fakehttp.Split(string(b.inputJSON()), 3)...)
}
