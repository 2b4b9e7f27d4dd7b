// Tests of JSON-RPC classification and encoding, plus the fuzz targets.

package codexharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		line   string
		kind   MessageKind
		id     string
		method string
	}{
		{`{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`, KindServerRequest, `0`, "item/commandExecution/requestApproval"},
		{`{"id":"7","method":"x/y"}`, KindServerRequest, `"7"`, "x/y"},
		{`{"id":7,"method":"x/y"}`, KindServerRequest, `7`, "x/y"},
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
		b, err := encodeResult(json.RawMessage(id), json.RawMessage(`{ "decision" : "accept" }`))
		if err != nil {
			t.Fatal(err)
		}
		want := `{"id":` + id + `,"result":{"decision":"accept"}}`
		if string(b) != want {
			t.Errorf("encodeResult(%s) = %s, want %s", id, b, want)
		}
		e := encodeError(json.RawMessage(id), -32601, "unsupported request: x<y")
		m, err := Decode(e)
		if err != nil || m.Kind != KindResponse || string(m.ID) != id || m.Error == nil || m.Error.Message != "unsupported request: x<y" {
			t.Errorf("encodeError(%s) = %s (%v)", id, e, err)
		}
	}
	if _, err := encodeResult(json.RawMessage(`1`), json.RawMessage(`{bad`)); err == nil {
		t.Error("encodeResult accepted invalid JSON")
	}
}

func TestInteractionIDsKeepStringAndNumberApart(t *testing.T) {
	if a, b := interactionID(json.RawMessage(`7`)), interactionID(json.RawMessage(`"7"`)); a == b || a != "rpc-7" || b != "rpc-s-7" {
		t.Errorf("ids %q %q", a, b)
	}
}

// seedLines adds every line of the reference transcripts (both directions)
// to f's seed corpus.
func seedLines(f *testing.F, server bool) {
	for _, path := range transcripts(f) {
		for _, l := range serverLines(f, path) {
			f.Add(l)
		}
	}
	if !server {
		for _, l := range []string{`{"id":`, `{"id":0}`, `{"method":"m","id":[1]}`, `{"id":"x","error":null,"result":null}`} {
			f.Add([]byte(l))
		}
	}
}

func FuzzDecode(f *testing.F) {
	seedLines(f, false)
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := Decode(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
			return
		}
		switch m.Kind {
		case KindServerRequest:
			if m.Method == "" || len(m.ID) == 0 {
				t.Fatalf("request without method or id: %+v", m)
			}
		case KindNotification:
			if m.Method == "" || m.ID != nil {
				t.Fatalf("bad notification: %+v", m)
			}
		case KindResponse:
			if len(m.ID) == 0 || m.Method != "" || (m.Result == nil) == (m.Error == nil) {
				t.Fatalf("bad response: %+v", m)
			}
		default:
			t.Fatalf("kind %v", m.Kind)
		}
		if m.ID != nil {
			// An answer echoes the id byte for byte and decodes back to it.
			b, err := encodeResult(m.ID, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			back, err := Decode(b)
			if err != nil || !bytes.Equal(back.ID, m.ID) {
				t.Fatalf("echo of id %s: %s (%v)", m.ID, b, err)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, path := range transcripts(f) {
		for _, l := range serverLines(f, path) {
			if m, err := Decode(l); err == nil && m.Kind == KindNotification {
				f.Add(m.Method, []byte(m.Params))
			}
		}
	}
	f.Add("item/agentMessage/delta", []byte(`{"itemId":"a","delta":"\u00e9"}`))
	f.Add("turn/completed", []byte(`{"turn":{"id":"x","status":"weird"}}`))
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		p := NewParser("fuzz")
		p.SetThread("t", "m")
		line, _ := json.Marshal(map[string]any{"method": method, "params": json.RawMessage("null")})
		terminals := 0
		for range 2 {
			evs, err := p.Parse(method, params, line)
			if err != nil && len(evs) > 0 {
				t.Fatalf("events with an error: %v", evs)
			}
			for _, ev := range evs {
				if ev.Type == "" {
					t.Fatal("event without a type")
				}
				if ev.Type.Terminal() {
					terminals++
				}
				if ev.Native != nil && len(ev.Native.Payload) > MaxNativePayload+64 {
					t.Fatalf("payload of %d bytes", len(ev.Native.Payload))
				}
				if (ev.Type == agent.EventAssistantDelta || ev.Type == agent.EventReasoningDelta) && !utf8.ValidString(ev.Text) {
					t.Fatalf("delta %q is not valid UTF-8", ev.Text)
				}
			}
		}
		if terminals > 1 {
			t.Fatalf("%d terminal events for one turn", terminals)
		}
		if strings.HasPrefix(method, "turn/completed") && terminals == 1 && p.Terminal() == "" {
			t.Fatal("terminal event without terminal state")
		}
	})
}
