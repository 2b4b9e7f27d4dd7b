// One pass per line: a pi RPC line decoded into a record by jsonscan.

package pi

import (
	"encoding/json"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
)

// decoder decodes stdout lines into records in one pass over each line
// (jsonscan): string and bool fields decoded, the variable parts (id, data,
// message, args) left as raw slices of the line, the rare typed fields
// (agent_end's messages, tool results, retry counts, dialog options)
// through encoding/json on their own bytes. Anything it does not handle
// exactly as encoding/json would falls back to json.Unmarshal of the whole
// line, so a record and an error are always what json.Unmarshal(line,
// &record) gives. Raw fields alias the line: the parser copies what it
// keeps (agent.CompactJSON, json.Unmarshal).
type decoder struct {
	// stdOnly decodes every line with json.Unmarshal alone (the
	// differential tests and BenchmarkParseReferenceStd).
	stdOnly bool
	ev      assistantEvent // storage of record.Event: a record is read before the next line
}

// decode fills r from line (r must be zero).
func (d *decoder) decode(line []byte, r *record) error {
	if !d.stdOnly && d.fast(line, r) == nil {
		return nil
	}
	slow := new(record) // only this path allocates the record: r stays on the caller's stack
	err := json.Unmarshal(line, slow)
	*r = *slow
	return err
}

var (
	recordKeys = []string{"type", "id", "command", "success", "error", "data", "message", "assistantMessageEvent",
		"messages", "toolCallId", "toolName", "args", "partialResult", "result", "isError", "attempt", "maxAttempts",
		"delayMs", "errorMessage", "finalError", "method", "title", "options", "placeholder", "prefill", "reason"}
	eventKeys   = []string{"type", "delta"}
	messageKeys = []string{"role", "content", "stopReason", "errorMessage", "provider", "model", "usage"}
	// names are the type values of most lines.
	names = jsonscan.NewNames("response", "agent_start", "agent_end", "turn_start", "turn_end", "message_start",
		"message_update", "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
		"text_delta", "thinking_delta", "toolcall_delta", "start", "text_start", "text_end", "thinking_start",
		"thinking_end", "toolcall_start", "toolcall_end", "done", "error", "prompt", "get_state",
		"assistant", "user", "toolResult", "stop", "toolUse", "aborted", "length")
)

func (d *decoder) fast(line []byte, r *record) error {
	s := jsonscan.New(line)
	if !s.TopNull() {
		if err := d.record(&s, r); err != nil {
			return err
		}
	}
	return s.End()
}

func (d *decoder) record(s *jsonscan.Scanner, r *record) error {
	return s.Object(recordKeys, func(key []byte) error {
		switch string(key) {
		case "type":
			return s.StrIn(&r.Type, names)
		case "id":
			return s.Raw(&r.ID)
		case "command":
			return s.StrIn(&r.Command, names)
		case "success":
			return s.Bool(&r.Success)
		case "error":
			return s.Str(&r.Error)
		case "data":
			return s.Raw(&r.Data)
		case "message":
			return d.messageField(s, r)
		case "assistantMessageEvent":
			return jsonscan.Nullable(s, &r.Event, &d.ev, eventKeys, func(ev *assistantEvent, key []byte) error {
				switch string(key) {
				case "type":
					return s.StrIn(&ev.Type, names)
				case "delta":
					return s.Str(&ev.Delta)
				}
				return jsonscan.ErrUnknownKey
			})
		case "messages":
			return d.messages(s, r)
		case "toolCallId":
			return s.Str(&r.ToolCallID)
		case "toolName":
			return s.Str(&r.ToolName)
		case "args":
			return s.Raw(&r.Args)
		case "partialResult":
			return jsonscan.Std(s, &r.PartialResult)
		case "result":
			return jsonscan.Std(s, &r.Result)
		case "isError":
			return s.Bool(&r.IsError)
		case "attempt":
			return jsonscan.Std(s, &r.Attempt)
		case "maxAttempts":
			return jsonscan.Std(s, &r.MaxAttempts)
		case "delayMs":
			return jsonscan.Std(s, &r.DelayMS)
		case "errorMessage":
			return s.Str(&r.ErrorMessage)
		case "finalError":
			return s.Str(&r.FinalError)
		case "method":
			return s.Str(&r.Method)
		case "title":
			return s.Str(&r.Title)
		case "options":
			return jsonscan.Std(s, &r.Options)
		case "placeholder":
			return s.Str(&r.Placeholder)
		case "prefill":
			return s.Str(&r.Prefill)
		case "reason":
			return s.Str(&r.Reason)
		}
		return jsonscan.ErrUnknownKey
	})
}

// messageField decodes record.Message: raw, and on message_start and
// message_end (when the type came first, as pi writes it) also as a message
// into r.msg, so that the parser does not decode it again. message_update's
// message, the partial one, stays raw.
func (d *decoder) messageField(s *jsonscan.Scanner, r *record) error {
	r.msg, r.hasMsg = message{}, false
	if r.Type != "message_start" && r.Type != "message_end" {
		return s.Raw(&r.Message)
	}
	ok, err := s.RawObject(&r.Message, func() error { return d.message(s, &r.msg) })
	r.hasMsg = ok
	return err
}

// messages decodes agent_end's messages as json.Unmarshal into a nil slice
// does: null leaves it nil, [] is an empty slice, each element a message.
// A repeated key takes the slow path (encoding/json reuses the first
// slice's elements).
func (d *decoder) messages(s *jsonscan.Scanner, r *record) error {
	if r.Messages != nil {
		return jsonscan.ErrSlow
	}
	if s.PeekNull() {
		return s.Skip()
	}
	msgs := []message{}
	err := s.Array(func() error {
		msgs = append(msgs, message{})
		return d.message(s, &msgs[len(msgs)-1])
	})
	r.Messages = msgs
	return err
}

// message decodes an AgentMessage object (null leaves it as it is).
func (d *decoder) message(s *jsonscan.Scanner, m *message) error {
	if s.PeekNull() {
		return s.Skip()
	}
	return s.Object(messageKeys, func(key []byte) error {
		switch string(key) {
		case "role":
			return s.StrIn(&m.Role, names)
		case "content":
			return s.Raw(&m.Content)
		case "stopReason":
			return s.StrIn(&m.StopReason, names)
		case "errorMessage":
			return s.Str(&m.ErrorMessage)
		case "provider":
			return s.Str(&m.Provider)
		case "model":
			return s.Str(&m.Model)
		case "usage":
			return jsonscan.Std(s, &m.Usage)
		}
		return jsonscan.ErrUnknownKey
	})
}
