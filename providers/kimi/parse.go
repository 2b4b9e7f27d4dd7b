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

// Bounds on what events carry (jsonstream's).
const (
	// MaxToolOutput bounds tool.completed output text.
	MaxToolOutput = jsonstream.MaxToolOutput
	// MaxNativePayload bounds provider.native payloads.
	MaxNativePayload = jsonstream.MaxNativePayload
)

// System subtypes the parser emits.
const SubtypeSessionNotResumed = "session_not_resumed"

// part is one element of an array content.
type part struct {
	Type  string `json:"type"`
	Text  string `json:"text"`
	Think string `json:"think"`
}

// Parser turns Kimi stream-json lines into events: messages in OpenAI's
// chat shape (jsonstream.Chat) and meta records. It is used from one
// goroutine; the zero value is not ready, use NewParser.
type Parser struct {
	chat      jsonstream.Chat
	resumed   string // the session the run asked to continue
	sessionID string
	done      bool
}

// NewParser returns a parser for one run that continues session resumed
// ("" for a fresh run).
func NewParser(resumed string) *Parser {
	p := &Parser{resumed: resumed, sessionID: resumed}
	p.chat = jsonstream.NewChat(ProviderID, p)
	return p
}

// SessionID is the session the CLI reported (or the resumed one).
func (p *Parser) SessionID() string { return p.sessionID }

// Done reports whether the resume hint (the run's completion) was parsed.
func (p *Parser) Done() bool { return p.done }

// Parse parses one stdout line. Malformed JSON returns an error (the caller
// logs and skips the line); unknown valid records become provider.native.
func (p *Parser) Parse(line []byte) ([]agent.Event, error) { return p.chat.Parse(line) }

// Other implements jsonstream.ChatDialect: the resume hint ends the run,
// another meta record is provider.native (meta/<type>).
func (p *Parser) Other(m *jsonstream.ChatMessage, line []byte) ([]agent.Event, bool) {
	if m.Role != "meta" {
		return nil, false
	}
	if m.Type == "session.resume_hint" {
		return p.resumeHint(m), true
	}
	return []agent.Event{p.chat.Native("meta", m.Type, line)}, true
}

// ToolText implements jsonstream.ChatDialect: a string or text parts.
func (p *Parser) ToolText(content json.RawMessage) string { return jsonstream.ContentText(content) }

// Assistant implements jsonstream.ChatDialect: an assistant message's think
// parts, its text, then its tool calls.
func (p *Parser) Assistant(m *jsonstream.ChatMessage) []agent.Event {
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
	return p.chat.AppendCalls(p.chat.AppendText(out, text.String()), "assistant/tool_call", m)
}

func (p *Parser) resumeHint(m *jsonstream.ChatMessage) []agent.Event {
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
