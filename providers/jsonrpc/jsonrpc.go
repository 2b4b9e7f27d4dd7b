// Package jsonrpc is the JSON-RPC 2.0 framing shared by the ACP client and
// the Codex app-server client: classify one line by its keys, keep ids
// byte-exact (7 and "7" differ, 0 is an id like any other), encode requests,
// notifications and answers, and the one JSON-RPC error type.
package jsonrpc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is what a line is, decided by which keys it carries.
type Kind int

// Message kinds.
const (
	// KindRequest has method and id: the peer asks, and must be answered
	// with the same id.
	KindRequest Kind = iota + 1
	// KindNotification has method and no id.
	KindNotification
	// KindResponse has id and result or error: the answer to one of ours.
	KindResponse
)

// String names the kind for logs and goldens.
func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// ErrMalformed is returned by Decode for a line that is not one JSON-RPC
// message. The caller logs and skips the line; it never ends a run.
var ErrMalformed = errors.New("malformed JSON-RPC message")

// Message is one decoded line. ID, Params, Result and the error
// data alias nothing: they are copies owned by the Message.
type Message struct {
	Kind Kind
	// ID is the JSON-RPC id exactly as sent (a JSON string or integer; the
	// server starts at 0, so 0 is an id like any other). 7 and "7" differ.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *Error
}

// Error is a JSON-RPC error object, the one error type of both clients.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error renders the message and the code, and data.details when the peer
// put the real reason there (qwen and gemini answer "Internal error" with
// details).
func (e *Error) Error() string {
	msg := fmt.Sprintf("%s (code %d)", e.Message, e.Code)
	if d := e.Details(); d != "" && !strings.Contains(e.Message, d) {
		msg += ": " + d
	}
	return msg
}

// Details is data.details (or data.message) when data carries one.
func (e *Error) Details() string {
	var d struct {
		Details string `json:"details"`
		Message string `json:"message"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return ""
	}
	if d.Details != "" {
		return d.Details
	}
	return d.Message
}

// envelope is the union of every message shape. A json.RawMessage field is
// nil when its key is absent and "null" when the key holds null.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// Decode classifies one line. A message is a server request when it has a
// method and a non-null id, a notification when it has a method and no id,
// and a response when it has an id and exactly one of result and error.
// Anything else, and ids that are neither a string nor an integer, return
// an error wrapping ErrMalformed. The "jsonrpc" member is neither required
// nor checked; unknown members are ignored.
func Decode(line []byte) (Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 || line[0] != '{' {
		return Message{}, fmt.Errorf("%w: not a JSON object", ErrMalformed)
	}
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		return Message{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	hasID := HasID(env.ID)
	if hasID {
		if err := checkID(env.ID); err != nil {
			return Message{}, err
		}
	}
	if len(env.Method) > 0 && !isNull(env.Method) {
		var method string
		if err := json.Unmarshal(env.Method, &method); err != nil || method == "" {
			return Message{}, fmt.Errorf("%w: method is not a non-empty string", ErrMalformed)
		}
		m := Message{Kind: KindNotification, Method: method, Params: clone(env.Params)}
		if hasID {
			m.Kind, m.ID = KindRequest, clone(env.ID)
		}
		return m, nil
	}
	if !hasID {
		return Message{}, fmt.Errorf("%w: neither method nor id", ErrMalformed)
	}
	hasResult, hasError := len(env.Result) > 0, len(env.Error) > 0 && !isNull(env.Error)
	switch {
	case hasResult && hasError:
		return Message{}, fmt.Errorf("%w: both result and error", ErrMalformed)
	case hasError:
		var e Error
		if err := json.Unmarshal(env.Error, &e); err != nil {
			return Message{}, fmt.Errorf("%w: error object: %w", ErrMalformed, err)
		}
		e.Data = clone(e.Data)
		return Message{Kind: KindResponse, ID: clone(env.ID), Error: &e}, nil
	case hasResult:
		return Message{Kind: KindResponse, ID: clone(env.ID), Result: clone(env.Result)}, nil
	}
	return Message{}, fmt.Errorf("%w: id without method, result or error", ErrMalformed)
}

// checkID accepts a JSON string or a JSON integer that fits in an int64.
func checkID(id json.RawMessage) error {
	switch id[0] {
	case '"':
		var s string
		if json.Unmarshal(id, &s) != nil {
			return fmt.Errorf("%w: bad string id", ErrMalformed)
		}
		return nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if _, err := strconv.ParseInt(string(id), 10, 64); err != nil {
			return fmt.Errorf("%w: id %s is not an integer", ErrMalformed, id)
		}
		return nil
	}
	return fmt.Errorf("%w: id %s is neither a string nor an integer", ErrMalformed, id)
}

func isNull(raw json.RawMessage) bool { return string(raw) == "null" }

// HasID reports whether a raw id member is present and not null.
func HasID(id json.RawMessage) bool { return len(id) > 0 && !isNull(id) }

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// Encoding of what we send, without the "jsonrpc" member (the Codex
// app-server does not need it).

type outRequest struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

type outNotification struct {
	Method string `json:"method"`
}

// EncodeRequest encodes a request.
func EncodeRequest(id int64, method string, params any) ([]byte, error) {
	return json.Marshal(outRequest{ID: id, Method: method, Params: params})
}

// EncodeNotification encodes a notification without params.
func EncodeNotification(method string) []byte {
	b, _ := json.Marshal(outNotification{Method: method})
	return b
}

// EncodeResult answers request id with result, which must be valid
// JSON. The line is assembled by hand so that the id is echoed byte for byte
// (json.Marshal would HTML-escape '<' in a string id).
func EncodeResult(id, result json.RawMessage) ([]byte, error) {
	if !json.Valid(result) {
		return nil, errors.New("result is not valid JSON")
	}
	var buf bytes.Buffer
	buf.Grow(len(id) + len(result) + 20)
	buf.WriteString(`{"id":`)
	buf.Write(id)
	buf.WriteString(`,"result":`)
	if err := json.Compact(&buf, result); err != nil {
		return nil, err
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// EncodeError answers request id with a JSON-RPC error.
func EncodeError(id json.RawMessage, code int64, msg string) []byte {
	e, _ := json.Marshal(Error{Code: code, Message: msg})
	out := make([]byte, 0, len(id)+len(e)+20)
	out = append(out, `{"id":`...)
	out = append(out, id...)
	out = append(out, `,"error":`...)
	out = append(out, e...)
	return append(out, '}')
}

// Standard JSON-RPC error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)
