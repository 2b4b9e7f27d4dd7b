package fakeapi

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/providers/internal/anthropic"
	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
)

// Request is one recorded HTTP request. Auth headers (x-api-key,
// authorization) are removed before recording.
type Request struct {
	fakehttp.Recorded
	// Body is Raw parsed as a Messages API request (zero if it did not parse).
	Body Body
}

// Body is the part of a Messages API request body the fake looks at.
type Body struct {
	Model     string            `json:"model"`
	MaxTokens int               `json:"max_tokens"`
	Stream    bool              `json:"stream"`
	System    json.RawMessage   `json:"system,omitempty"`
	Messages  []Message         `json:"messages"`
	Tools     []json.RawMessage `json:"tools,omitempty"`
	Thinking  json.RawMessage   `json:"thinking,omitempty"`
	Metadata  json.RawMessage   `json:"metadata,omitempty"`
}

// Message is one conversation message. A string content is normalized to a
// single text block.
type Message struct {
	Role    string  `json:"role"`
	Content []Block `json:"content"`
}

// UnmarshalJSON accepts both the string and the block-array content forms.
func (m *Message) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.Role = raw.Role
	m.Content = nil
	if len(raw.Content) == 0 {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw.Content, &s); err == nil {
		m.Content = []Block{{Type: "text", Text: s}}
		return nil
	}
	return json.Unmarshal(raw.Content, &m.Content)
}

// Block is one content block of a request message (the Messages API's,
// shared with the claude provider's parser); ResultText flattens a
// tool_result's content.
type Block = anthropic.Block

// Text returns the message's user-visible text: its text blocks joined with
// "\n", skipping <system-reminder> blocks the CLI injects.
func (m Message) Text() string {
	var parts []string
	for _, b := range m.Content {
		if b.Type != "text" || isReminder(b.Text) {
			continue
		}
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n")
}

// ToolResults returns the message's tool_result blocks.
func (m Message) ToolResults() []Block {
	var out []Block
	for _, b := range m.Content {
		if b.Type == "tool_result" {
			out = append(out, b)
		}
	}
	return out
}

func isReminder(s string) bool {
	return strings.HasPrefix(strings.TrimSpace(s), "<system-reminder>")
}

// IsMessages reports whether r is a POST /v1/messages (any query).
func (r *Request) IsMessages() bool {
	return r.Method == http.MethodPost && r.Path == "/v1/messages"
}

// LastUser returns the last user message, or a zero Message.
func (r *Request) LastUser() Message {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		if r.Body.Messages[i].Role == "user" {
			return r.Body.Messages[i]
		}
	}
	return Message{}
}

// Prompt is the text of the last user message that has text: the prompt of
// the current turn, also while the turn goes through tool round trips (whose
// user messages carry only tool_result blocks).
func (r *Request) Prompt() string {
	for i := len(r.Body.Messages) - 1; i >= 0; i-- {
		m := r.Body.Messages[i]
		if m.Role != "user" {
			continue
		}
		if t := m.Text(); t != "" {
			return t
		}
	}
	return ""
}

// ToolResults returns the tool_result blocks of the last user message: non-empty
// when the request continues a tool round trip.
func (r *Request) ToolResults() []Block {
	return r.LastUser().ToolResults()
}

// Transcript renders every message as "role: text" lines (tool blocks as
// "tool_use NAME INPUT" / "tool_result CONTENT"), for assertions on history.
func (r *Request) Transcript() string {
	var sb strings.Builder
	for _, m := range r.Body.Messages {
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				if isReminder(b.Text) {
					continue
				}
				sb.WriteString(m.Role + ": " + b.Text + "\n")
			case "tool_use":
				sb.WriteString(m.Role + ": tool_use " + b.Name + " " + string(b.Input) + "\n")
			case "tool_result":
				sb.WriteString(m.Role + ": tool_result " + b.ResultText() + "\n")
			case "thinking":
				sb.WriteString(m.Role + ": thinking " + b.Thinking + "\n")
			}
		}
	}
	return sb.String()
}
