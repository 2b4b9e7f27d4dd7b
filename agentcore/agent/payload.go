// Helpers for the bounded, secret-free native payloads providers attach to events.

package agent

import (
	"bytes"
	"encoding/json"
)

// NativePayload returns line as compact JSON when it is valid and at most max
// bytes, otherwise a small note with its size ({"truncated":true,"bytes":N}).
// An empty line gives nil. The result never aliases line.
func NativePayload(line []byte, max int) json.RawMessage {
	if len(line) == 0 {
		return nil
	}
	if len(line) <= max {
		if c := CompactJSON(line); c != nil {
			return c
		}
	}
	b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(line)})
	return b
}

// CompactJSON returns raw without insignificant whitespace, or nil when it is
// empty or not valid JSON. The result never aliases raw.
func CompactJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return nil
	}
	return buf.Bytes()
}

// NativeKey is the interaction id of a native request id: the string
// itself for a JSON string, the compact JSON otherwise.
func NativeKey(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(id)
}

// JSONString encodes s as a JSON string (a native id), or nil when s is empty.
func JSONString(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	b, _ := json.Marshal(s)
	return b
}

// Truncate cuts s to at most max bytes at a rune boundary, marking the cut with "…".
func Truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
