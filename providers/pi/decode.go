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
	eventKeys = []string{"type", "delta"}
	// names are the type values of most lines.
	names = jsonscan.NewNames("response", "agent_start", "agent_end", "turn_start", "turn_end", "message_start",
		"message_update", "message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end",
		"text_delta", "thinking_delta", "toolcall_delta", "start", "text_start", "text_end", "thinking_start",
		"thinking_end", "toolcall_start", "toolcall_end", "done", "error", "prompt", "get_state")
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
			return s.Raw(&r.Message)
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
			return jsonscan.Std(s, &r.Messages)
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
