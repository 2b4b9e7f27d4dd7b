// One pass per line: a stream-json line decoded into a record by jsonscan.

package claude

import (
	"encoding/json"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
)

// decoder decodes stdout lines into records in one pass over each line
// (jsonscan): it validates the line as it goes (what encoding/json's Valid
// accepts), decodes the string fields and the stream event itself, and
// leaves the variable parts (message, request, ids) as raw slices of the
// line. Rare typed fields (counts, usage, errors) go through encoding/json
// on their own bytes. Any case it does not handle exactly as encoding/json
// would falls back to json.Unmarshal of the whole line, so a record and an
// error are always what json.Unmarshal(line, &record) gives.
//
// It remembers the last session and message ids so the delta lines that
// repeat them do not allocate them again.
type decoder struct {
	sessionID string
	messageID string
	ev        streamEvent
	delt      streamDelta
}

// decode fills r from line (r must be zero). Raw fields alias line.
func (d *decoder) decode(line []byte, r *record) error {
	if d.fast(line, r) == nil {
		return nil
	}
	slow := new(record) // only this path allocates the record: r stays on the caller's stack
	err := json.Unmarshal(line, slow)
	*r = *slow
	return err
}

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
	return s.Object(recordKeys, func(key []byte) (err error) {
		switch string(key) {
		case "type":
			err = s.StrIn(&r.Type, typeNames)
		case "subtype":
			err = s.StrIn(&r.Subtype, typeNames)
		case "session_id":
			err = s.StrCached(&r.SessionID, &d.sessionID)
		case "api_message_id":
			err = s.StrCached(&r.APIMessageID, &d.messageID)
		case "model":
			err = s.Str(&r.Model)
		case "tool_name":
			err = s.Str(&r.ToolName)
		case "tool_use_id":
			err = s.Str(&r.ToolUseID)
		case "result":
			err = s.Str(&r.Result)
		case "terminal_reason":
			err = s.Str(&r.TerminalReason)
		case "event":
			err = d.event(s, r)
		case "message":
			err = s.Raw(&r.Message)
		case "error_status":
			err = s.Raw(&r.ErrorStatus)
		case "error":
			err = s.Raw(&r.Error)
		case "api_error_status":
			err = s.Raw(&r.APIErrorStatus)
		case "request_id":
			err = s.Raw(&r.RequestID)
		case "request":
			err = s.Raw(&r.Request)
		case "attempt":
			err = jsonscan.Std(s, &r.Attempt)
		case "max_retries":
			err = jsonscan.Std(s, &r.MaxRetries)
		case "retry_delay_ms":
			err = jsonscan.Std(s, &r.RetryDelayMS)
		case "is_api_error_message":
			err = jsonscan.Std(s, &r.IsAPIErrorMessage)
		case "is_error":
			err = jsonscan.Std(s, &r.IsError)
		case "errors":
			err = jsonscan.Std(s, &r.Errors)
		case "duration_ms":
			err = jsonscan.Std(s, &r.DurationMS)
		case "num_turns":
			err = jsonscan.Std(s, &r.NumTurns)
		case "total_cost_usd":
			err = jsonscan.Std(s, &r.TotalCostUSD)
		case "usage":
			err = jsonscan.Std(s, &r.Usage)
		case "uuid", "parent_tool_use_id": // on most lines, and no field folds onto them
			err = s.Skip()
		default:
			err = jsonscan.ErrUnknownKey
		}
		return err
	})
}

var (
	recordKeys = []string{"type", "subtype", "session_id", "api_message_id", "model", "tool_name", "tool_use_id",
		"result", "terminal_reason", "event", "message", "error_status", "error", "api_error_status", "request_id",
		"request", "attempt", "max_retries", "retry_delay_ms", "is_api_error_message", "is_error", "errors",
		"duration_ms", "num_turns", "total_cost_usd", "usage"}
	eventKeys = []string{"type", "delta"}
	deltaKeys = []string{"type", "text", "thinking"}
)

// event decodes the stream event into the decoder's own storage: a record
// is read before the next line is decoded.
func (d *decoder) event(s *jsonscan.Scanner, r *record) error {
	return jsonscan.Nullable(s, &r.Event, &d.ev, eventKeys, func(ev *streamEvent, key []byte) error {
		switch string(key) {
		case "type":
			return s.StrIn(&ev.Type, typeNames)
		case "delta":
			return jsonscan.Nullable(s, &ev.Delta, &d.delt, deltaKeys, func(dl *streamDelta, key []byte) error {
				switch string(key) {
				case "type":
					return s.StrIn(&dl.Type, typeNames)
				case "text":
					return s.Str(&dl.Text)
				case "thinking":
					return s.Str(&dl.Thinking)
				}
				return jsonscan.ErrUnknownKey
			})
		}
		return jsonscan.ErrUnknownKey
	})
}

// typeNames are the type and subtype values the CLI writes on most lines.
var typeNames = jsonscan.NewNames("stream_event", "assistant", "user", "system", "result", "control_request",
	"control_response", "control_cancel_request", "content_block_delta", "content_block_start",
	"content_block_stop", "message_start", "message_delta", "message_stop", "ping", "text_delta",
	"thinking_delta", "input_json_delta", "signature_delta", "citations_delta", "init", "status",
	"thinking_tokens", "success", "error_during_execution", "api_retry", "permission_denied")
