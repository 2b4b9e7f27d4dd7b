// The chat family: messages in OpenAI's chat shape, one a line, which
// grok-cli prints and Kimi's stream-json (providers/kimi) too.

package jsonstream

import (
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// ChatMessage is one line of the chat family: a message (role, content, an
// assistant's tool calls, a tool result's call id) or another record of the
// CLI's (Kimi's meta records: type and session_id).
type ChatMessage struct {
	Role       string          `json:"role"`
	Type       string          `json:"type"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []ChatToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	SessionID  string          `json:"session_id"`
}

// ChatToolCall is one tool call of an assistant message.
type ChatToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// ChatDialect is what a chat-family CLI's parser maps its own way.
type ChatDialect interface {
	// Assistant maps an assistant message.
	Assistant(m *ChatMessage) []agent.Event
	// ToolText renders a tool message's content as the tool's output.
	ToolText(content json.RawMessage) string
	// Other maps a record of another role; false makes it provider.native.
	Other(m *ChatMessage, line []byte) ([]agent.Event, bool)
}

// Chat parses chat-family lines: a user message (the prompt) carries
// nothing, a tool message is tool.completed of its call, the rest is the
// dialect's; what nobody maps is provider.native, its kind the role. Its
// other methods are the events a dialect builds. Use NewChat.
type Chat struct {
	turn
	d ChatDialect
}

// NewChat returns the Chat of provider id for one run, mapping with d
// (the parser that holds it).
func NewChat(id agent.ProviderID, d ChatDialect) Chat {
	return Chat{turn: newTurn(id, ""), d: d}
}

// Parse implements procrun.LineParser: malformed JSON is an error naming
// the provider (a field of another type is left zero, see decodeLine).
func (c *Chat) Parse(line []byte) ([]agent.Event, error) {
	var m ChatMessage
	if err := decodeLine(line, &m); err != nil {
		return nil, fmt.Errorf("%s line: %w", c.provider, err)
	}
	switch m.Role {
	case "user":
		return nil, nil
	case "assistant":
		return c.d.Assistant(&m), nil
	case "tool":
		if m.ToolCallID != "" {
			return []agent.Event{c.completed("tool", m.ToolCallID, c.d.ToolText(m.Content), false)}, nil
		}
	default:
		if evs, ok := c.d.Other(&m, line); ok {
			return evs, nil
		}
	}
	return []agent.Event{c.unknown(m.Role, "", line)}, nil
}

// AppendCalls appends to out the tool.started of each of m's tool calls
// that has an id, its native kind kind.
func (c *Chat) AppendCalls(out []agent.Event, kind string, m *ChatMessage) []agent.Event {
	for _, tc := range m.ToolCalls {
		if tc.ID != "" {
			out = append(out, c.started(kind, tc.ID, tc.Function.Name, tc.Function.Arguments))
		}
	}
	return out
}

// AppendText appends to out the assistant.delta of a whole message (none
// when it is empty), set apart from the previous one by a blank line.
func (c *Chat) AppendText(out []agent.Event, s string) []agent.Event {
	if s = c.join.next(s); s == "" {
		return out
	}
	return append(out, agent.Event{Type: agent.EventAssistantDelta, Text: s})
}

// Native is the provider.native event of a valid record, its kind
// typ[/subtype].
func (c *Chat) Native(typ, subtype string, line []byte) agent.Event {
	return c.unknown(typ, subtype, line)
}
