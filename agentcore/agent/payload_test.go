package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPayloadHelpers(t *testing.T) {
	if got := string(NativePayload([]byte(` { "a" : 1 } `), 100)); got != `{"a":1}` {
		t.Errorf("NativePayload compact = %s", got)
	}
	if got := string(NativePayload([]byte(`{"a":"`+strings.Repeat("x", 200)+`"}`), 100)); got != `{"bytes":208,"truncated":true}` {
		t.Errorf("NativePayload big = %s", got)
	}
	if got := string(NativePayload([]byte(`not json`), 100)); got != `{"bytes":8,"truncated":true}` {
		t.Errorf("NativePayload invalid = %s", got)
	}
	if NativePayload(nil, 100) != nil || CompactJSON([]byte("{")) != nil || JSONString("") != nil {
		t.Error("empty or invalid input must give nil")
	}
	if got := string(JSONString(`a"b`)); got != `"a\"b"` {
		t.Errorf("JSONString = %s", got)
	}
	if got := Truncate("héllo", 2); got != "h…" {
		t.Errorf("Truncate cut inside a rune: %q", got)
	}
	if got := Truncate("abc", 3); got != "abc" {
		t.Errorf("Truncate = %q", got)
	}
}

func TestStreamEndsOnce(t *testing.T) {
	var got []EventType
	s := Stream{Emit: func(ev Event) { got = append(got, ev.Type) }}
	s.Send(Event{Type: EventAssistantDelta})
	s.Send(Event{Type: EventRunFailed, Text: "boom"})
	s.Send(Event{Type: EventRunCompleted})
	s.Send(Event{Type: EventAssistantDelta})
	if len(got) != 2 || s.Terminal != EventRunFailed || s.Failure != "boom" {
		t.Errorf("sent %v, terminal %s, failure %q", got, s.Terminal, s.Failure)
	}
}

func TestNativeKey(t *testing.T) {
	for in, want := range map[string]string{`"req-1"`: "req-1", `7`: "7", `"a\"b"`: `a"b`, `{"n":1}`: `{"n":1}`} {
		if got := NativeKey(json.RawMessage(in)); got != want {
			t.Errorf("NativeKey(%s) = %q, want %q", in, got, want)
		}
	}
}
