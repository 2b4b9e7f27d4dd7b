// Tests of the JSON-RPC framing.

package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		line   string
		kind   Kind
		id     string
		method string
	}{
		{`{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`, KindRequest, `0`, "item/commandExecution/requestApproval"},
		{`{"id":"7","method":"x/y"}`, KindRequest, `"7"`, "x/y"},
		{`{"id":7,"method":"x/y"}`, KindRequest, `7`, "x/y"},
		{`{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}`, KindNotification, ``, "turn/started"},
		{`{"method":"initialized"}`, KindNotification, ``, "initialized"},
		{`{"method":"n","id":null}`, KindNotification, ``, "n"},
		{`{"id":1,"result":{"userAgent":"x"}}`, KindResponse, `1`, ""},
		{`{"id":"init-str-id","result":{}}`, KindResponse, `"init-str-id"`, ""},
		{`{"id":3,"result":null}`, KindResponse, `3`, ""},
		{`{"error":{"code":-32600,"message":"no rollout found for thread id x"},"id":2}`, KindResponse, `2`, ""},
		{`{"jsonrpc":"2.0","id":-4,"result":1}`, KindResponse, `-4`, ""},
		{`  {"id":0,"result":{}}  `, KindResponse, `0`, ""},
	}
	for _, tt := range tests {
		m, err := Decode([]byte(tt.line))
		if err != nil {
			t.Errorf("Decode(%s): %v", tt.line, err)
			continue
		}
		if m.Kind != tt.kind || string(m.ID) != tt.id || m.Method != tt.method {
			t.Errorf("Decode(%s) = kind %v id %q method %q, want %v %q %q", tt.line, m.Kind, m.ID, m.Method, tt.kind, tt.id, tt.method)
		}
	}
	m, _ := Decode([]byte(`{"error":{"code":-32600,"message":"Not initialized","data":{"a":1}},"id":"before-init"}`))
	if m.Error == nil || m.Error.Code != -32600 || m.Error.Message != "Not initialized" || string(m.Error.Data) != `{"a":1}` {
		t.Errorf("error = %+v", m.Error)
	}
}

func TestDecodeMalformed(t *testing.T) {
	for _, line := range []string{
		``, `this is not json`, `{"id":`, `[1,2]`, `"x"`, `{}`, `{"foo":1}`,
		`{"id":1}`, `{"id":1.5,"result":{}}`, `{"id":true,"method":"m"}`, `{"id":{},"result":1}`,
		`{"id":1,"result":{},"error":{"code":1,"message":"m"}}`, `{"method":""}`, `{"method":7}`,
		`{"id":99999999999999999999,"result":{}}`, `{"id":1,"error":"oops"}`, `{"method":"m"} trailing`,
	} {
		if m, err := Decode([]byte(line)); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%q) = %+v, %v; want ErrMalformed", line, m, err)
		}
	}
}

func TestDecodeOwnsItsBytes(t *testing.T) {
	line := []byte(`{"method":"m","id":5,"params":{"a":"b"}}`)
	m, err := Decode(line)
	if err != nil {
		t.Fatal(err)
	}
	for i := range line {
		line[i] = 'x'
	}
	if string(m.ID) != "5" || string(m.Params) != `{"a":"b"}` {
		t.Errorf("message aliases the line: %s %s", m.ID, m.Params)
	}
}

func TestEncodeEchoesIDsByteExact(t *testing.T) {
	for _, id := range []string{`0`, `7`, `"7"`, `"<a&b>"`, `"\u00e9t\u00e9"`, `-3`} {
		b, err := EncodeResult(json.RawMessage(id), json.RawMessage(`{ "decision" : "accept" }`))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":` + id + `,"result":{"decision":"accept"}}`
		if string(b) != want {
			t.Errorf("EncodeResult(%s) = %s, want %s", id, b, want)
		}
		e := EncodeError(json.RawMessage(id), -32601, "unsupported request: x<y")
		m, err := Decode(e)
		if err != nil || m.Kind != KindResponse || string(m.ID) != id || m.Error == nil || m.Error.Message != "unsupported request: x<y" {
			t.Errorf("EncodeError(%s) = %s (%v)", id, e, err)
		}
	}
	if _, err := EncodeResult(json.RawMessage(`1`), json.RawMessage(`{bad`)); err == nil {
		t.Error("EncodeResult accepted invalid JSON")
	}
}

func TestHasID(t *testing.T) {
	for id, want := range map[string]bool{"": false, "null": false, "0": true, `"0"`: true, `"9e33f37c"`: true} {
		if got := HasID(json.RawMessage(id)); got != want {
			t.Errorf("HasID(%q) = %v, want %v", id, got, want)
		}
	}
	if HasID(nil) {
		t.Error("HasID(nil)")
	}
}
