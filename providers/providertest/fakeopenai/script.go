// Scripts: what the fake answers to one request.

package fakeopenai

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Script answers one chat request. It returns nil when the request is not its
// business; the server then asks the next script and finally falls back to
// "Fake title" (a request without tools, such as opencode's title generation)
// or a short "no scenario" text.
type Script func(req *Request) *Reply

// Reply is what the fake sends back to one chat request, in either API shape.
type Reply struct {
	// Err, when set, makes the reply an HTTP error.
	Err *APIError
	// Reasoning are streamed reasoning deltas (reasoning_content for OpenAI,
	// thought parts for Gemini), sent before the text.
	Reasoning []string
	// Text are the streamed content deltas.
	Text []string
	// ToolCalls follow the text; each call's arguments are streamed in pieces.
	ToolCalls []ToolCall
	// FinishReason defaults to "tool_calls" with tool calls, else "stop".
	FinishReason string
	// Delay is slept before every streamed delta (and before a non-streaming
	// body). The sleep ends early when the client goes away.
	Delay time.Duration
	// InputTokens and OutputTokens override the estimated usage.
	InputTokens, OutputTokens int
}

// APIError is an error reply: HTTP Status with a JSON error body.
type APIError struct {
	Status  int
	Message string
}

// Error implements error.
func (e *APIError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// finishReason is the reply's effective OpenAI finish_reason.
func (r *Reply) finishReason() string {
	if r.FinishReason != "" {
		return r.FinishReason
	}
	if len(r.ToolCalls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// TextReply is a reply of text streamed as the given chunks.
func TextReply(chunks ...string) *Reply { return &Reply{Text: chunks} }

// Text always answers with text streamed as chunks.
func Text(chunks ...string) Script {
	return func(*Request) *Reply { return TextReply(chunks...) }
}

// Reasoning answers with reasoning deltas followed by text deltas.
func Reasoning(thinking []string, text ...string) Script {
	return func(*Request) *Reply { return &Reply{Reasoning: thinking, Text: text} }
}

// When routes to s the requests whose last user text contains substr.
func When(substr string, s Script) Script {
	return fakehttp.When((*Request).LastUserText, substr, s)
}

// WithTools passes to s only requests that offer tools (the agent's real
// turns, not side calls such as title generation).
func WithTools(s Script) Script { return fakehttp.Filter((*Request).HasTools, s) }

// Sequence answers the i-th request it sees with scripts[i]; the last one
// repeats.
func Sequence(scripts ...Script) Script { return fakehttp.Sequence(scripts...) }

// Slow streams n text deltas "word00 ", "word01 ", ... with delay before
// each (the words of the Responses fake's Slow), for cancel tests such as
// providertest.CheckCancelMidStream.
func Slow(n int, delay time.Duration) Script {
	return func(*Request) *Reply { return &Reply{Text: fakehttp.Words(n), Delay: delay} }
}

// Error answers with an HTTP error, e.g. Error(500, "fake upstream failure").
func Error(status int, msg string) Script {
	return func(*Request) *Reply { return &Reply{Err: &APIError{Status: status, Message: msg}} }
}

// ResultText is the final answer of the tool scripts once the client sent
// the tool results back: "Tool result: <text>" per result ("Tool error: …"
// for an error result), so a test can assert the round trip.
func ResultText(results []Message) string {
	var sb strings.Builder
	for i, r := range results {
		if i > 0 {
			sb.WriteString(" ")
		}
		label := "Tool result: "
		if r.IsError {
			label = "Tool error: "
		}
		sb.WriteString(label + strings.TrimSpace(r.Text))
	}
	return sb.String()
}

// afterTools is the reply once tool results came back.
func afterTools(results []Message) *Reply {
	out := ResultText(results)
	half := len(out) / 2
	return TextReply("Done. ", out[:half], out[half:])
}

// Call is a two-phase Script. It answers the first request (no tool results
// yet) with "Calling <tool>." and one call of the first offered tool named in
// names, its arguments built by args from that tool; when the client comes
// back with the tool results it answers ResultText. It returns nil when no
// such tool is offered.
func Call(names []string, args func(t Tool) map[string]any) Script {
	return func(req *Request) *Reply {
		if res := req.ToolResults(); len(res) > 0 {
			return afterTools(res)
		}
		for _, n := range names {
			t, ok := req.Tool(n)
			if !ok {
				continue
			}
			b, err := json.Marshal(args(t))
			if err != nil {
				panic(fmt.Sprintf("fakeopenai: tool args: %v", err))
			}
			return &Reply{
				Text:      []string{"Calling ", t.Name, "."},
				ToolCalls: []ToolCall{{ID: fakehttp.NewID("call"), Name: t.Name, Arguments: string(b)}},
			}
		}
		return nil
	}
}

// ShellTools are the shell tool names Shell looks for, in order: opencode and
// pi call it bash, qwen and gemini run_shell_command.
var ShellTools = []string{"bash", "run_shell_command", "shell", "Bash", "execute_command"}

// WriteTools are the file-write tool names WriteFile looks for.
var WriteTools = []string{"write", "write_file", "Write", "create_file"}

// Shell calls the agent's shell tool with command (see Call). Other required
// string arguments (qwen's description) are filled with a fixed text.
func Shell(command string) Script {
	return Call(ShellTools, func(t Tool) map[string]any {
		args := fillRequired(t, "Run a command for the fake LLM test")
		args["command"] = command
		return args
	})
}

// WriteFile calls the agent's write tool with path and content (the path
// argument is whichever of filePath, file_path, path the tool declares).
func WriteFile(path, content string) Script {
	return Call(WriteTools, func(t Tool) map[string]any {
		args := fillRequired(t, "fake")
		key := "path"
		props := properties(t)
		for _, k := range []string{"filePath", "file_path", "path", "absolute_path"} {
			if slices.Contains(props, k) {
				key = k
				break
			}
		}
		delete(args, "path")
		args[key] = path
		args["content"] = content
		return args
	})
}

// fillRequired returns the tool's required string properties set to filler.
func fillRequired(t Tool, filler string) map[string]any {
	var s struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(t.Parameters, &s)
	out := map[string]any{}
	for _, k := range s.Required {
		if p, ok := s.Properties[k]; ok && (p.Type == "string" || p.Type == "STRING") {
			out[k] = filler
		}
	}
	return out
}

func properties(t Tool) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(t.Parameters, &s)
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	return out
}

// argChunks splits tool-call arguments into three streamed pieces (one
// empty piece for no arguments).
func argChunks(args string) []string {
	if args == "" {
		return []string{""}
	}
	return fakehttp.Split(args, 3)
}
