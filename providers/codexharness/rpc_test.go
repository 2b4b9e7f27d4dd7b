// Tests of JSON-RPC classification and encoding, plus the fuzz targets.

package codexharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

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
		m, err := jsonrpc.Decode(line)
		if err != nil {
			if !errors.Is(err, jsonrpc.ErrMalformed) {
				t.Fatalf("error %v does not wrap jsonrpc.ErrMalformed", err)
			}
			return
		}
		switch m.Kind {
		case jsonrpc.KindRequest:
			if m.Method == "" || len(m.ID) == 0 {
				t.Fatalf("request without method or id: %+v", m)
			}
		case jsonrpc.KindNotification:
			if m.Method == "" || m.ID != nil {
				t.Fatalf("bad notification: %+v", m)
			}
		case jsonrpc.KindResponse:
			if len(m.ID) == 0 || m.Method != "" || (m.Result == nil) == (m.Error == nil) {
				t.Fatalf("bad response: %+v", m)
			}
		default:
			t.Fatalf("kind %v", m.Kind)
		}
		if m.ID != nil {
			// An answer echoes the id byte for byte and decodes back to it.
			b, err := jsonrpc.EncodeResult(m.ID, json.RawMessage(`{}`))
			if err != nil {
				t.Fatal(err)
			}
			back, err := jsonrpc.Decode(b)
			if err != nil || !bytes.Equal(back.ID, m.ID) {
				t.Fatalf("echo of id %s: %s (%v)", m.ID, b, err)
			}
		}
	})
}

func FuzzParse(f *testing.F) {
	for _, path := range transcripts(f) {
		for _, l := range serverLines(f, path) {
			if m, err := jsonrpc.Decode(l); err == nil && m.Kind == jsonrpc.KindNotification {
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
