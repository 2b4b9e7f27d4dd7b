// One pass per line: an agent's JSON-RPC line decoded into an inMessage by
// jsonscan.

package acp

import (
	"bytes"
	"encoding/json"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
)

// decoder decodes the agent's lines into inMessages in one pass over each
// line (jsonscan): the envelope, the params of the methods the client reads
// and, for a message chunk, its content block, with ids, results, raw
// input and output left as raw slices of the line and the rare typed
// fields (an error, permission options, plan entries, usage and _meta)
// through encoding/json on their own bytes. Anything it does not handle
// exactly as encoding/json would falls back to json.Unmarshal of the whole
// line, so a message and an error are always what json.Unmarshal(line,
// &inMessage) gives. Raw fields alias the line: the parser copies what it
// keeps (agent.CompactJSON, json.Unmarshal), and a response's result,
// which leaves the parser in its Reply, is copied here.
type decoder struct {
	// stdOnly decodes every line with json.Unmarshal alone (the
	// differential tests and BenchmarkParseReferenceStd).
	stdOnly bool
	// storage of inParams.Update and .ToolCall: a message is read before
	// the next line is decoded.
	update, toolCall sessionUpdate
	// the last session and message ids, which every chunk repeats.
	sessionID, messageID string
}

// decode fills m from line (m must be zero).
func (d *decoder) decode(line []byte, m *inMessage) error {
	if !d.stdOnly && d.fast(line, m) == nil {
		if m.Result != nil {
			m.Result = bytes.Clone(m.Result)
		}
		return nil
	}
	slow := new(inMessage) // only this path allocates the message: m stays on the caller's stack
	err := json.Unmarshal(line, slow)
	*m = *slow
	return err
}

var (
	messageKeys = []string{"id", "method", "params", "result", "error"}
	paramsKeys  = []string{"sessionId", "update", "toolCall", "options", "path", "content", "line", "limit", "requestId"}
	updateKeys  = []string{"sessionUpdate", "content", "messageId", "toolCallId", "title", "kind", "status", "rawInput",
		"rawOutput", "locations", "entries", "used", "size", "cost", "severity", "description", "_meta"}
	blockKeys = []string{"type", "text", "data", "mimeType"}
	metaKeys  = []string{"usage", "toolName", "durationMs"}
	// names are the method, update and status values of most lines.
	names = jsonscan.NewNames("session/update", "session/request_permission", "agent_message_chunk",
		"agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan", "usage_update",
		"available_commands_update", "current_mode_update", "text", "pending", "in_progress", "completed", "failed",
		"execute", "edit", "read", "search", "other", "think", "fetch")
)

func (d *decoder) fast(line []byte, m *inMessage) error {
	s := jsonscan.New(line)
	if !s.TopNull() {
		if err := d.message(&s, m); err != nil {
			return err
		}
	}
	return s.End()
}

func (d *decoder) message(s *jsonscan.Scanner, m *inMessage) error {
	return s.Object(messageKeys, func(key []byte) error {
		switch string(key) {
		case "id":
			return s.Raw(&m.ID)
		case "method":
			return s.StrIn(&m.Method, names)
		case "params":
			return d.params(s, &m.Params)
		case "result":
			return s.Raw(&m.Result)
		case "error":
			return jsonscan.Std(s, &m.Error)
		}
		return jsonscan.ErrUnknownKey
	})
}

// params decodes the params struct (held by value: null leaves it as it is).
func (d *decoder) params(s *jsonscan.Scanner, p *inParams) error {
	if s.PeekNull() {
		return s.Skip()
	}
	return s.Object(paramsKeys, func(key []byte) error {
		switch string(key) {
		case "sessionId":
			return s.StrCached(&p.SessionID, &d.sessionID)
		case "update":
			return jsonscan.Nullable(s, &p.Update, &d.update, updateKeys, func(u *sessionUpdate, key []byte) error {
				return d.updateField(s, u, key)
			})
		case "toolCall":
			return jsonscan.Nullable(s, &p.ToolCall, &d.toolCall, updateKeys, func(u *sessionUpdate, key []byte) error {
				return d.updateField(s, u, key)
			})
		case "options":
			return jsonscan.Std(s, &p.Options)
		case "path":
			return s.Str(&p.Path)
		case "content":
			return s.Str(&p.Content)
		case "line":
			return jsonscan.Std(s, &p.Line)
		case "limit":
			return jsonscan.Std(s, &p.Limit)
		case "requestId":
			return s.Raw(&p.RequestID)
		}
		return jsonscan.ErrUnknownKey
	})
}

// updateField decodes one key of a session/update payload (at level 3).
func (d *decoder) updateField(s *jsonscan.Scanner, u *sessionUpdate, key []byte) error {
	switch string(key) {
	case "sessionUpdate":
		return s.StrIn(&u.SessionUpdate, names)
	case "content":
		u.block, u.hasBlock = ContentBlock{}, false
		ok, err := s.RawObject(&u.Content, func() error { return contentBlock(s, &u.block) })
		u.hasBlock = ok
		return err
	case "messageId":
		return s.StrCached(&u.MessageID, &d.messageID)
	case "toolCallId":
		return s.Str(&u.ToolCallID)
	case "title":
		return s.StrPtr(&u.Title)
	case "kind":
		return s.StrIn(&u.Kind, names)
	case "status":
		return s.StrIn(&u.Status, names)
	case "rawInput":
		return s.Raw(&u.RawInput)
	case "rawOutput":
		return s.Raw(&u.RawOutput)
	case "locations":
		return jsonscan.Std(s, &u.Locations)
	case "entries":
		return jsonscan.Std(s, &u.Entries)
	case "used":
		return jsonscan.Std(s, &u.Used)
	case "size":
		return jsonscan.Std(s, &u.Size)
	case "cost":
		return jsonscan.Std(s, &u.Cost)
	case "severity":
		return s.Str(&u.Severity)
	case "description":
		return s.Str(&u.Description)
	case "_meta":
		return jsonscan.Nullable(s, &u.Meta, new(updateMeta), metaKeys, func(m *updateMeta, key []byte) error {
			switch string(key) {
			case "usage":
				return jsonscan.Std(s, &m.Usage)
			case "toolName":
				return s.Str(&m.ToolName)
			case "durationMs":
				return jsonscan.Std(s, &m.DurationMS)
			}
			return jsonscan.ErrUnknownKey
		})
	}
	return jsonscan.ErrUnknownKey
}

// contentBlock decodes a chunk's content object as json.Unmarshal into a
// ContentBlock would.
func contentBlock(s *jsonscan.Scanner, c *ContentBlock) error {
	return s.Object(blockKeys, func(key []byte) error {
		switch string(key) {
		case "type":
			return s.StrIn(&c.Type, names)
		case "text":
			return s.Str(&c.Text)
		case "data":
			return s.Str(&c.Data)
		case "mimeType":
			return s.Str(&c.MimeType)
		}
		return jsonscan.ErrUnknownKey
	})
}
