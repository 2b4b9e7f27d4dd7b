// JSON-RPC framing: classify one app-server line by its keys, encode ours.

package codexharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// MessageKind is what a line is, decided by which keys it carries.
type MessageKind int

// Message kinds.
const (
	// KindServerRequest has method and id: the server asks, we must answer
	// with the same id.
	KindServerRequest MessageKind = iota + 1
	// KindNotification has method and no id.
	KindNotification
	// KindResponse has id and result or error: the answer to one of ours.
	KindResponse
)

// String names the kind for logs and goldens.
func (k MessageKind) String() string {
	switch k {
	case KindServerRequest:
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

// Message is one decoded app-server line. ID, Params, Result and the error
// data alias nothing: they are copies owned by the Message.
type Message struct {
	Kind MessageKind
	// ID is the JSON-RPC id exactly as sent (a JSON string or integer; the
	// server starts at 0, so 0 is an id like any other). 7 and "7" differ.
	ID     json.RawMessage
	Method string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// Error implements error.
func (e *RPCError) Error() string {
	return fmt.Sprintf("json-rpc error %d: %s", e.Code, e.Message)
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
	hasID := len(env.ID) > 0 && !isNull(env.ID)
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
			m.Kind, m.ID = KindServerRequest, clone(env.ID)
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
		var e RPCError
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

func clone(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return bytes.Clone(b)
}

// Encoding of what we send. No "jsonrpc" member: the server does not need it.

type outRequest struct {
	ID     int64  `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

type outNotification struct {
	Method string `json:"method"`
}

func encodeRequest(id int64, method string, params any) ([]byte, error) {
	return json.Marshal(outRequest{ID: id, Method: method, Params: params})
}

func encodeNotification(method string) []byte {
	b, _ := json.Marshal(outNotification{Method: method})
	return b
}

// encodeResult answers server request id with result, which must be valid
// JSON. The line is assembled by hand so that the id is echoed byte for byte
// (json.Marshal would HTML-escape '<' in a string id).
func encodeResult(id, result json.RawMessage) ([]byte, error) {
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

// encodeError answers server request id with a JSON-RPC error.
func encodeError(id json.RawMessage, code int64, msg string) []byte {
	e, _ := json.Marshal(RPCError{Code: code, Message: msg})
	out := make([]byte, 0, len(id)+len(e)+20)
	out = append(out, `{"id":`...)
	out = append(out, id...)
	out = append(out, `,"error":`...)
	out = append(out, e...)
	return append(out, '}')
}

// JSON-RPC error codes we send.
const (
	codeMethodNotFound = -32601
	codeDeclined       = -32000
)
