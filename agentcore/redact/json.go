// Scrubbing raw JSON (tool inputs, native payloads) so that it stays valid JSON.

package redact

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// jsonForms returns the JSON-escaped forms of the values that differ from
// the values themselves (a secret holding a quote, a backslash or <>&).
func jsonForms(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, html := range []bool{false, true} {
			q := quote(v, html)
			if e := q[1 : len(q)-1]; e != v {
				out = append(out, e)
			}
		}
	}
	return out
}

// quote returns s as a JSON string.
func quote(s string, escapeHTML bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(escapeHTML)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// JSON returns raw with every secret value inside its strings (keys too)
// replaced by Mask, as valid JSON; strings are scrubbed with Cut, so the
// remains of a secret next to a CutMark go too. Raw JSON that cannot hold a
// secret (no secret, escaped or not, no CutMark, and no \u or \/ escape that
// could hide one) is returned as is; otherwise it is decoded, scrubbed and
// written back compact.
// Invalid JSON is returned as a JSON string of its scrubbed text.
func (r *Redactor) JSON(raw json.RawMessage) json.RawMessage {
	m := r.load()
	if m == nil || len(raw) == 0 {
		return raw
	}
	s := string(raw)
	if _, _, hit := m.json.find(s, 0, len(s)); !hit && !strings.Contains(s, `\u`) && !strings.Contains(s, `\/`) && !strings.Contains(s, CutMark) {
		return raw
	}
	out, changed, err := rewriteJSON(raw, r.Cut)
	if err != nil {
		return json.RawMessage(quote(r.Cut(s), false))
	}
	if !changed {
		return raw
	}
	return out
}

// rewriteJSON re-encodes one JSON value compactly, with f applied to every
// string and key, keeping the order of object keys.
func rewriteJSON(raw []byte, f func(string) string) (json.RawMessage, bool, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	type frame struct {
		obj bool
		n   int // tokens written in this container
	}
	var (
		out     bytes.Buffer
		stack   []frame
		changed bool
		values  int
	)
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, false, err
		}
		d, isDelim := tok.(json.Delim)
		closing := isDelim && (d == '}' || d == ']')
		if len(stack) > 0 && !closing {
			top := &stack[len(stack)-1]
			switch {
			case top.obj && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		} else if len(stack) == 0 {
			if values++; values > 1 {
				return nil, false, errors.New("more than one JSON value")
			}
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			if closing {
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, frame{obj: v == '{'})
			}
		case string:
			s := f(v)
			changed = changed || s != v
			out.WriteString(quote(s, false))
		case json.Number:
			out.WriteString(string(v))
		case bool:
			if v {
				out.WriteString("true")
			} else {
				out.WriteString("false")
			}
		case nil:
			out.WriteString("null")
		}
	}
	if values == 0 {
		return nil, false, errors.New("no JSON value")
	}
	return out.Bytes(), changed, nil
}
