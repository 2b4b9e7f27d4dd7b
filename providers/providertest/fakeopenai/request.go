// Recorded requests, normalized across the OpenAI Chat Completions and the
// Gemini API shapes.

package fakeopenai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// API names the wire shape a request came in.
type API string

// APIs the fake serves.
const (
	APIOpenAI API = "openai"
	APIGemini API = "gemini"
)

// Request is one recorded HTTP request. Authorization, x-api-key and
// x-goog-api-key headers (and a key= query parameter) are removed before
// recording. Messages and Tools are the body normalized to one shape whatever
// API it came in.
type Request struct {
	fakehttp.Recorded
	API API

	Model        string
	Stream       bool
	IncludeUsage bool
	Messages     []Message
	Tools        []Tool
}

// Role of a normalized message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one normalized conversation message.
type Message struct {
	Role string
	// Text is the concatenated text content.
	Text string
	// ToolCalls are an assistant message's tool calls.
	ToolCalls []ToolCall
	// ToolCallID and ToolName identify the call a tool message answers.
	ToolCallID string
	ToolName   string
	// IsError is set on a tool message whose result is an error (Gemini
	// functionResponse {"error": ...}).
	IsError bool
}

// Tool is one tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments.
	Parameters json.RawMessage
}

// ToolCall is one tool call, in a reply or in a recorded assistant message.
type ToolCall struct {
	ID   string
	Name string
	// Arguments is the arguments object as JSON.
	Arguments string
}

// IsChat reports whether the request asked for a model reply (chat
// completion or Gemini generateContent).
func (r *Request) IsChat() bool {
	return r.Method == http.MethodPost && (r.Path == "/v1/chat/completions" || strings.Contains(r.Path, ":generateContent") || strings.Contains(r.Path, ":streamGenerateContent"))
}

// HasTools reports whether the request offered tools.
func (r *Request) HasTools() bool { return len(r.Tools) > 0 }

// Tool returns the offered tool called name.
func (r *Request) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// ToolNames lists the offered tools' names.
func (r *Request) ToolNames() []string {
	out := make([]string, len(r.Tools))
	for i, t := range r.Tools {
		out[i] = t.Name
	}
	return out
}

// LastUserText is the text of the last user message: what scripts key on.
func (r *Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if m := r.Messages[i]; m.Role == RoleUser && m.Text != "" {
			return m.Text
		}
	}
	return ""
}

// ToolResults are the tool messages at the end of the conversation: the
// results the client sends back after the model's tool calls.
func (r *Request) ToolResults() []Message {
	i := len(r.Messages)
	for i > 0 && r.Messages[i-1].Role == RoleTool {
		i--
	}
	return r.Messages[i:]
}

// Transcript renders the conversation as "role: text" lines (tool calls as
// "assistant: call name(args)").
func (r *Request) Transcript() string {
	var sb strings.Builder
	for _, m := range r.Messages {
		if m.Text != "" {
			sb.WriteString(m.Role + ": " + m.Text + "\n")
		}
		for _, c := range m.ToolCalls {
			sb.WriteString(m.Role + ": call " + c.Name + "(" + c.Arguments + ")\n")
		}
	}
	return sb.String()
}

// wireToolCall is a Chat Completions tool call as it is sent: in an
// assistant message, or in pieces in streamed deltas (Index says which).
type wireToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// decodeOpenAI fills the normalized fields from a Chat Completions body.
func (r *Request) decodeOpenAI() error {
	var b struct {
		Model         string `json:"model"`
		Stream        bool   `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		Messages []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			Name       string          `json:"name"`
			ToolCalls  []wireToolCall  `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Raw, &b); err != nil {
		return err
	}
	r.Model, r.Stream = b.Model, b.Stream
	r.IncludeUsage = b.StreamOptions != nil && b.StreamOptions.IncludeUsage
	for _, m := range b.Messages {
		role := m.Role
		if role == "developer" {
			role = RoleSystem
		}
		msg := Message{Role: role, Text: openAIText(m.Content), ToolCallID: m.ToolCallID, ToolName: m.Name}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range b.Tools {
		r.Tools = append(r.Tools, Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	return nil
}

// openAIText flattens a content that is a string or an array of parts.
func openAIText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == 'n' {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// geminiPart is one part of a Gemini content.
type geminiPart struct {
	Text         string `json:"text,omitempty"`
	Thought      bool   `json:"thought,omitempty"`
	FunctionCall *struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args,omitempty"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id,omitempty"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response,omitempty"`
	} `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

// decodeGemini fills the normalized fields from a generateContent body.
func (r *Request) decodeGemini(model string, stream bool) error {
	var b struct {
		Contents          []geminiContent `json:"contents"`
		SystemInstruction *geminiContent  `json:"systemInstruction"`
		Tools             []struct {
			FunctionDeclarations []struct {
				Name                 string          `json:"name"`
				Description          string          `json:"description"`
				Parameters           json.RawMessage `json:"parameters"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			} `json:"functionDeclarations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(r.Raw, &b); err != nil {
		return err
	}
	r.Model, r.Stream, r.IncludeUsage = model, stream, true
	if b.SystemInstruction != nil {
		r.Messages = append(r.Messages, Message{Role: RoleSystem, Text: geminiText(b.SystemInstruction.Parts)})
	}
	for _, c := range b.Contents {
		role := RoleUser
		if c.Role == "model" {
			role = RoleAssistant
		}
		msg := Message{Role: role, Text: geminiText(c.Parts)}
		var results []Message
		for _, p := range c.Parts {
			if fc := p.FunctionCall; fc != nil {
				args := string(bytes.TrimSpace(fc.Args))
				if args == "" {
					args = "{}"
				}
				msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: fc.ID, Name: fc.Name, Arguments: args})
			}
			if fr := p.FunctionResponse; fr != nil {
				res := Message{Role: RoleTool, ToolCallID: fr.ID, ToolName: fr.Name, Text: geminiResponseText(fr.Response)}
				var v map[string]json.RawMessage
				if json.Unmarshal(fr.Response, &v) == nil {
					_, res.IsError = v["error"]
				}
				results = append(results, res)
			}
		}
		if msg.Text != "" || len(msg.ToolCalls) > 0 || len(results) == 0 {
			r.Messages = append(r.Messages, msg)
		}
		r.Messages = append(r.Messages, results...)
	}
	for _, t := range b.Tools {
		for _, f := range t.FunctionDeclarations {
			params := f.Parameters
			if len(params) == 0 {
				params = f.ParametersJSONSchema
			}
			r.Tools = append(r.Tools, Tool{Name: f.Name, Description: f.Description, Parameters: params})
		}
	}
	return nil
}

func geminiText(parts []geminiPart) string {
	var texts []string
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// geminiResponseText is a functionResponse's "output" (or "error") string, or
// its JSON.
func geminiResponseText(raw json.RawMessage) string {
	var v map[string]json.RawMessage
	if json.Unmarshal(raw, &v) == nil {
		for _, k := range []string{"output", "error", "result", "content"} {
			var s string
			if json.Unmarshal(v[k], &s) == nil && s != "" {
				return s
			}
		}
	}
	return string(bytes.TrimSpace(raw))
}
