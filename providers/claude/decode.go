// Single-pass decoder of one stream-json line into a record.

package claude

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// errSlowPath makes decodeRecord hand the line to encoding/json: the line is
// not valid JSON, a value has an unexpected type, or a key is spelled in a
// way encoding/json would still match (other case, escapes, non-ASCII).
var errSlowPath = errors.New("claude: line needs encoding/json")

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// decoder decodes stdout lines into records in one pass over each line: it
// validates the line as it goes (what encoding/json's Valid accepts), decodes
// the string fields and the stream event itself, and leaves the variable
// parts (message, request, ids) as raw slices of the line. Rare typed fields
// (counts, usage, errors) go through encoding/json on their own bytes. Any
// case it does not handle exactly as encoding/json would falls back to
// json.Unmarshal of the whole line, so a record and an error are always what
// json.Unmarshal(line, &record) gives.
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
	s := scanner{b: line}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == 'n' {
		if err := s.literal("null"); err != nil {
			return err
		}
	} else if err := d.record(&s, r); err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errSlowPath
	}
	return nil
}

func (d *decoder) record(s *scanner, r *record) error {
	return s.object(1, recordKeys, func(key []byte) (err error) {
		switch string(key) {
		case "type":
			err = s.str(&r.Type, true)
		case "subtype":
			err = s.str(&r.Subtype, true)
		case "session_id":
			err = s.strCached(&r.SessionID, &d.sessionID)
		case "api_message_id":
			err = s.strCached(&r.APIMessageID, &d.messageID)
		case "model":
			err = s.str(&r.Model, false)
		case "tool_name":
			err = s.str(&r.ToolName, false)
		case "tool_use_id":
			err = s.str(&r.ToolUseID, false)
		case "result":
			err = s.str(&r.Result, false)
		case "terminal_reason":
			err = s.str(&r.TerminalReason, false)
		case "event":
			err = d.event(s, r)
		case "message":
			err = s.raw(&r.Message)
		case "error_status":
			err = s.raw(&r.ErrorStatus)
		case "error":
			err = s.raw(&r.Error)
		case "api_error_status":
			err = s.raw(&r.APIErrorStatus)
		case "request_id":
			err = s.raw(&r.RequestID)
		case "request":
			err = s.raw(&r.Request)
		case "attempt":
			err = std(s, &r.Attempt)
		case "max_retries":
			err = std(s, &r.MaxRetries)
		case "retry_delay_ms":
			err = std(s, &r.RetryDelayMS)
		case "is_api_error_message":
			err = std(s, &r.IsAPIErrorMessage)
		case "is_error":
			err = std(s, &r.IsError)
		case "errors":
			err = std(s, &r.Errors)
		case "duration_ms":
			err = std(s, &r.DurationMS)
		case "num_turns":
			err = std(s, &r.NumTurns)
		case "total_cost_usd":
			err = std(s, &r.TotalCostUSD)
		case "usage":
			err = std(s, &r.Usage)
		default:
			err = errUnknownKey
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
func (d *decoder) event(s *scanner, r *record) error {
	return nullable(s, &r.Event, &d.ev, 2, eventKeys, func(ev *streamEvent, key []byte) error {
		switch string(key) {
		case "type":
			return s.str(&ev.Type, true)
		case "delta":
			return nullable(s, &ev.Delta, &d.delt, 3, deltaKeys, func(dl *streamDelta, key []byte) error {
				switch string(key) {
				case "type":
					return s.str(&dl.Type, true)
				case "text":
					return s.str(&dl.Text, false)
				case "thinking":
					return s.str(&dl.Thinking, false)
				}
				return errUnknownKey
			})
		}
		return errUnknownKey
	})
}

// nullable decodes an object field held by pointer, as encoding/json does:
// null sets *p to nil; an object fills the value *p points to, or store
// (zeroed first) when *p is nil.
func nullable[T any](s *scanner, p **T, store *T, depth int, known []string, field func(v *T, key []byte) error) error {
	if s.peekNull() {
		*p = nil
		return s.literal("null")
	}
	if *p == nil {
		var zero T
		*store = zero
		*p = store
	}
	v := *p
	return s.object(depth, known, func(key []byte) error { return field(v, key) })
}

// typeNames are the type and subtype values the CLI writes on most lines.
var typeNames = func() map[string]string {
	m := map[string]string{}
	for _, s := range []string{"stream_event", "assistant", "user", "system", "result", "control_request",
		"control_response", "control_cancel_request", "content_block_delta", "content_block_start",
		"content_block_stop", "message_start", "message_delta", "message_stop", "ping", "text_delta",
		"thinking_delta", "input_json_delta", "signature_delta", "citations_delta", "init", "status",
		"thinking_tokens", "success", "error_during_execution", "api_retry", "permission_denied"} {
		m[s] = s
	}
	return m
}()

// typeName interns the common type names.
func typeName(b []byte) string {
	if s, ok := typeNames[string(b)]; ok {
		return s
	}
	return string(b)
}

// scanner walks one JSON text, validating as encoding/json's checkValid does.
type scanner struct {
	b []byte
	i int
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peekNull() bool {
	return s.i < len(s.b) && s.b[s.i] == 'n'
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return errSlowPath
	}
	s.i += len(lit)
	return nil
}

// open consumes the '{' of an object at nesting level depth.
func (s *scanner) open(depth int) error {
	if depth > maxDepth || s.i >= len(s.b) || s.b[s.i] != '{' {
		return errSlowPath
	}
	s.i++
	return nil
}

// key scans to the object's next key and past its colon; n is the number of
// members read so far. more is false at the closing brace. When match is
// set, keys must be plain: encoding/json unescapes keys before matching.
func (s *scanner) key(n int, match bool) (key []byte, more bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, errSlowPath
	}
	switch c := s.b[s.i]; {
	case c == '}':
		s.i++
		return nil, false, nil
	case n > 0 && c != ',':
		return nil, false, errSlowPath
	case n > 0:
		s.i++
		s.ws()
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, errSlowPath
	}
	start := s.i + 1
	plain, err := s.skipString()
	if err != nil || match && !plain {
		return nil, false, errSlowPath
	}
	key = s.b[start : s.i-1]
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, errSlowPath
	}
	s.i++
	s.ws()
	return key, true, nil
}

// errUnknownKey is what an object's field function returns for a key that
// is none of its fields.
var errUnknownKey = errors.New("claude: unknown key")

// object reads the object at nesting level depth: field decodes the value
// of each key, or returns errUnknownKey and the value is skipped (see
// unknown; known are the object's field names).
func (s *scanner) object(depth int, known []string, field func(key []byte) error) error {
	if err := s.open(depth); err != nil {
		return err
	}
	for n := 0; ; n++ {
		key, more, err := s.key(n, true)
		if err != nil || !more {
			return err
		}
		if err = field(key); err == errUnknownKey {
			err = s.unknown(key, known, depth)
		}
		if err != nil {
			return err
		}
	}
}

// unknown skips the value of a key no field has, unless encoding/json's
// case-insensitive matching could give it to one of known (non-ASCII keys
// fold in ways of their own: those take the slow path).
func (s *scanner) unknown(key []byte, known []string, depth int) error {
	upper := false
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return errSlowPath
		}
		upper = upper || 'A' <= c && c <= 'Z'
	}
	if upper {
		for _, k := range known {
			if bytes.EqualFold(key, []byte(k)) {
				return errSlowPath
			}
		}
	}
	return s.skip(depth)
}

// str decodes a string value into *dst (null leaves it as it is); intern
// takes the common type names from a table instead of allocating them.
func (s *scanner) str(dst *string, intern bool) error {
	body, plain, err := s.strBody()
	switch {
	case err != nil || body == nil:
		return err
	case plain && intern:
		*dst = typeName(body)
	case plain:
		*dst = string(body)
	default:
		*dst = unquote(body)
	}
	return nil
}

// strCached is str reusing *last when the plain bytes repeat it.
func (s *scanner) strCached(dst, last *string) error {
	body, plain, err := s.strBody()
	switch {
	case err != nil || body == nil:
		return err
	case !plain:
		*dst = unquote(body)
	default:
		if string(body) != *last {
			*last = string(body)
		}
		*dst = *last
	}
	return nil
}

// strBody scans a string or null value: body is nil for null.
func (s *scanner) strBody() (body []byte, plain bool, err error) {
	if s.peekNull() {
		return nil, false, s.literal("null")
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, errSlowPath
	}
	start := s.i
	if plain, err = s.skipString(); err != nil {
		return nil, false, err
	}
	return s.b[start+1 : s.i-1 : s.i-1], plain, nil
}

// raw sets *dst to the value's bytes (aliasing the line), as json.RawMessage
// does (null included).
func (s *scanner) raw(dst *json.RawMessage) error {
	start := s.i
	if err := s.skip(1); err != nil {
		return err
	}
	*dst = s.b[start:s.i:s.i]
	return nil
}

// std decodes the value into *dst with encoding/json (rare fields of rare
// lines), through a copy so that dst does not escape.
func std[T any](s *scanner, dst *T) error {
	start := s.i
	if err := s.skip(1); err != nil {
		return err
	}
	v := new(T)
	*v = *dst
	if json.Unmarshal(s.b[start:s.i], v) != nil {
		return errSlowPath
	}
	*dst = *v
	return nil
}

// skip validates and skips one value at s.i; depth is its container's level.
func (s *scanner) skip(depth int) error {
	if s.i >= len(s.b) {
		return errSlowPath
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, err := s.skipString()
		return err
	case '{':
		if err := s.open(depth + 1); err != nil {
			return err
		}
		for n := 0; ; n++ {
			_, more, err := s.key(n, false)
			if err != nil || !more {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
		}
	case '[':
		if depth+1 > maxDepth {
			return errSlowPath
		}
		s.i++
		s.ws()
		if s.i < len(s.b) && s.b[s.i] == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			s.ws()
			if s.i >= len(s.b) {
				return errSlowPath
			}
			switch s.b[s.i] {
			case ',':
				s.i++
				s.ws()
			case ']':
				s.i++
				return nil
			default:
				return errSlowPath
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return s.number()
		}
		return errSlowPath
	}
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	b, i := s.b, s.i
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		return i > n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		digits()
	default:
		return errSlowPath
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return errSlowPath
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return errSlowPath
		}
	}
	s.i = i
	return nil
}

// strStop marks the bytes that end a plain run inside a string.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	for c := 0x80; c < 256; c++ {
		t[c] = true
	}
	return t
}()

// skipString validates and skips the string at s.i (its opening quote).
// plain reports a string without escapes whose bytes are ASCII or valid
// UTF-8: its text is its bytes, as encoding/json would decode it.
func (s *scanner) skipString() (plain bool, err error) {
	b, i := s.b, s.i+1
	plain = true
	for {
		for i+8 <= len(b) && !hasStop(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i >= len(b) {
			return false, errSlowPath
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return plain, nil
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return false, errSlowPath
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false, errSlowPath
				}
				i += 6
			default:
				return false, errSlowPath
			}
		case c < 0x20:
			return false, errSlowPath
		default: // non-ASCII: encoding/json keeps valid UTF-8 and replaces the rest
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				plain = false
			}
			i += size
		}
	}
}

// hasStop reports whether any of the 8 bytes of x is a strStop byte: a
// control character, '"', '\\' or non-ASCII (exact for "any", SWAR).
func hasStop(x uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q, e := x^(ones*'"'), x^(ones*'\\')
	less20 := (x - ones*0x20) &^ x // a byte below 0x20 (below 0x80 where the high bit is clear)
	zeroQ := (q - ones) &^ q       // a byte equal to '"'
	zeroE := (e - ones) &^ e       // a byte equal to '\\'
	return (less20|zeroQ|zeroE|x)&highs != 0
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// unquote decodes a validated string body with escapes or invalid UTF-8
// exactly as encoding/json does (lone surrogates and invalid bytes become
// U+FFFD).
func unquote(s []byte) string {
	b := make([]byte, 0, len(s)+utf8.UTFMax)
	for r := 0; r < len(s); {
		switch c := s[r]; {
		case c == '\\':
			switch e := s[r+1]; e {
			case 'b':
				b, r = append(b, '\b'), r+2
			case 'f':
				b, r = append(b, '\f'), r+2
			case 'n':
				b, r = append(b, '\n'), r+2
			case 'r':
				b, r = append(b, '\r'), r+2
			case 't':
				b, r = append(b, '\t'), r+2
			case 'u':
				rr := getu4(s[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(s[r:])); dec != unicode.ReplacementChar {
						b, r = utf8.AppendRune(b, dec), r+6
						break
					}
					rr = unicode.ReplacementChar
				}
				b = utf8.AppendRune(b, rr)
			default: // '"', '\\', '/'
				b, r = append(b, e), r+2
			}
		case c < utf8.RuneSelf:
			b, r = append(b, c), r+1
		default:
			rr, size := utf8.DecodeRune(s[r:])
			b, r = utf8.AppendRune(b, rr), r+size
		}
	}
	return string(b)
}

// getu4 decodes \uXXXX at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}
