// Parser: Kimi stream-json stdout lines → agent.Events.

package kimi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/jsonstream"
)

// ProviderID is the kimi provider's id.
const ProviderID agent.ProviderID = "kimi"

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.completed output text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native payloads.
	MaxNativePayload = 8 << 10
)

// System subtypes the parser emits.
const SubtypeSessionNotResumed = "session_not_resumed"

// message is one stdout line.
type message struct {
	Role       string          `json:"role"`
	Type       string          `json:"type"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	SessionID  string          `json:"session_id"`
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

// part is one element of an array content.
type part struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Think string `json:"think"`
}

// Parser turns Kimi stream-json lines into events. It is used from one
// goroutine; the zero value is not ready, use NewParser.
type Parser struct {
	resumed   string // the session the run asked to continue
	sessionID string
	tools     map[string]string // tool call id → name
	textOut   bool              // some assistant text was emitted
	lastNL    bool              // the emitted text ends in a newline
	done      bool
}

// NewParser returns a parser for one run that continues session resumed
// ("" for a fresh run).
func NewParser(resumed string) *Parser {
	return &Parser{resumed: resumed, sessionID: resumed, tools: map[string]string{}}
}

// SessionID is the session the CLI reported (or the resumed one).
func (p *Parser) SessionID() string { return p.sessionID }

// Done reports whether the resume hint (the run's completion) was parsed.
func (p *Parser) Done() bool { return p.done }

// Parse parses one stdout line. Malformed JSON returns an error (the caller
// logs and skips the line); unknown valid records become provider.native.
func (p *Parser) Parse(line []byte) ([]agent.Event, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("kimi line: %w", err)
	}
	switch m.Role {
	case "assistant":
		return p.assistant(&m), nil
	case "tool":
		if m.ToolCallID == "" {
			return []agent.Event{native("tool", line)}, nil
		}
		out, _ := contentText(m.Content)
		return []agent.Event{{Type: agent.EventToolCompleted, Tool: &agent.Tool{
			ID: m.ToolCallID, Name: p.tools[m.ToolCallID], Output: agent.Truncate(out, MaxToolOutput),
		}, Native: &agent.Native{Provider: ProviderID, Kind: "tool", ID: jsonString(m.ToolCallID)}}}, nil
	case "meta":
		if m.Type == "session.resume_hint" {
			return p.resumeHint(&m), nil
		}
		return []agent.Event{native("meta/"+m.Type, line)}, nil
	case "user":
		return nil, nil
	}
	kind := m.Role
	if kind == "" {
		kind = "unknown"
	}
	return []agent.Event{native(kind, line)}, nil
}

func (p *Parser) assistant(m *message) []agent.Event {
	var out []agent.Event
	var text strings.Builder
	raw := bytes.TrimSpace(m.Content)
	switch {
	case len(raw) > 0 && raw[0] == '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		text.WriteString(s)
	case len(raw) > 0 && raw[0] == '[':
		var parts []part
		_ = json.Unmarshal(raw, &parts)
		for _, pt := range parts {
			switch pt.Type {
			case "text":
				text.WriteString(pt.Text)
			case "think":
				if pt.Think != "" {
					out = append(out, agent.Event{Type: agent.EventReasoningDelta, Text: pt.Think})
				}
			}
		}
	}
	if s := text.String(); s != "" {
		if p.textOut && !p.lastNL && !strings.HasPrefix(s, "\n") {
			s = "\n\n" + s
		}
		p.textOut, p.lastNL = true, strings.HasSuffix(s, "\n")
		out = append(out, agent.Event{Type: agent.EventAssistantDelta, Text: s})
	}
	for _, c := range m.ToolCalls {
		if c.ID == "" {
			continue
		}
		name := c.Function.Name
		p.tools[c.ID] = name
		input := jsonstream.ToolInput(c.Function.Arguments)
		out = append(out, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{
			ID: c.ID, Name: name, Input: input, Summary: jsonstream.ToolSummary(name, input),
		}, Native: &agent.Native{Provider: ProviderID, Kind: "assistant/tool_call", ID: jsonString(c.ID)}})
	}
	return out
}

func (p *Parser) resumeHint(m *message) []agent.Event {
	var out []agent.Event
	if m.SessionID != "" && m.SessionID != p.sessionID {
		if p.resumed != "" && p.sessionID == p.resumed {
			out = append(out, agent.Event{Type: agent.EventSystem, Subtype: SubtypeSessionNotResumed,
				Text: fmt.Sprintf("kimi did not continue session %s and started %s; earlier context is not in this session", p.resumed, m.SessionID)})
		}
		p.sessionID = m.SessionID
		out = append(out, agent.Event{Type: agent.EventSessionUpdated, SessionID: m.SessionID})
	}
	p.done = true
	return append(out, agent.Event{Type: agent.EventRunCompleted})
}

// contentText flattens a tool message's content (a string or text parts).
func contentText(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, true
	}
	var parts []part
	if json.Unmarshal(raw, &parts) != nil {
		return string(raw), false
	}
	var b []string
	for _, pt := range parts {
		if pt.Text != "" {
			b = append(b, pt.Text)
		}
	}
	return strings.Join(b, "\n"), false
}

// native builds a provider.native event with a bounded payload.
func native(kind string, line []byte) agent.Event {
	return agent.Event{Type: agent.EventProviderNative, Native: &agent.Native{
		Provider: ProviderID, Kind: kind, Payload: agent.NativePayload(line, MaxNativePayload),
	}}
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
