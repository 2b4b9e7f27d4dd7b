// Package jsonscan is the single-pass JSON walker behind the providers'
// line decoders (issue 19): a decoder walks one stdout line with a Scanner,
// validating it as it goes exactly as encoding/json does, decoding the
// fields it knows and skipping the rest, and gives up with ErrSlow on
// anything it does not handle exactly as encoding/json would (invalid JSON,
// a value of another type, a key encoding/json would unescape or fold onto
// a field). The decoder then hands the whole line to json.Unmarshal, so a
// decoded value and an error are always what json.Unmarshal gives.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// ErrSlow says the line needs encoding/json: it is not valid JSON, a value
// has an unexpected type, or a key is spelled in a way encoding/json would
// still match (other case, escapes, non-ASCII).
var ErrSlow = errors.New("jsonscan: line needs encoding/json")

// ErrUnknownKey is what an object's field function returns for a key that
// is none of its fields: Object then skips the value.
var ErrUnknownKey = errors.New("jsonscan: unknown key")

// MaxDepth is encoding/json's nesting limit.
const MaxDepth = 10000

// Scanner walks one JSON text.
type Scanner struct {
	b     []byte
	i     int
	depth int // containers open at i
}

// New returns a Scanner at the start of line, one JSON text. A decoder
// reads its one value (TopNull, then Object or any other method) and
// checks with End that nothing follows; a Scanner stays on its caller's
// stack as long as it is only passed to these methods.
func New(line []byte) Scanner { return Scanner{b: line} }

// TopNull consumes a top-level null, which json.Unmarshal takes as a no-op,
// and reports it.
func (s *Scanner) TopNull() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += len("null")
		return true
	}
	return false
}

// End checks that only whitespace follows the value.
func (s *Scanner) End() error {
	s.ws()
	if s.i != len(s.b) {
		return ErrSlow
	}
	return nil
}

// ws skips JSON whitespace.
func (s *Scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// PeekNull reports whether the next value starts like null.
func (s *Scanner) PeekNull() bool {
	return s.i < len(s.b) && s.b[s.i] == 'n'
}

// PeekObject reports whether the next value is an object.
func (s *Scanner) PeekObject() bool {
	return s.i < len(s.b) && s.b[s.i] == '{'
}

func (s *Scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return ErrSlow
	}
	s.i += len(lit)
	return nil
}

// open consumes the '{' of an object or the '[' of an array.
func (s *Scanner) open(c byte) error {
	if s.depth >= MaxDepth || s.i >= len(s.b) || s.b[s.i] != c {
		return ErrSlow
	}
	s.i++
	s.depth++
	return nil
}

// key scans to the object's next key and past its colon; n is the number of
// members read so far. more is false at the closing brace. When match is
// set, keys must be plain: encoding/json unescapes keys before matching.
func (s *Scanner) key(n int, match bool) (key []byte, more bool, err error) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, ErrSlow
	}
	switch c := s.b[s.i]; {
	case c == '}':
		s.i++
		s.depth--
		return nil, false, nil
	case n > 0 && c != ',':
		return nil, false, ErrSlow
	case n > 0:
		s.i++
		s.ws()
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, ErrSlow
	}
	start := s.i + 1
	plain, err := s.skipString()
	if err != nil || match && !plain {
		return nil, false, ErrSlow
	}
	key = s.b[start : s.i-1]
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, ErrSlow
	}
	s.i++
	s.ws()
	return key, true, nil
}

// Object reads an object: field decodes the value of each key, or returns
// ErrUnknownKey and the value is skipped, unless encoding/json's
// case-insensitive matching could give it to one of known, the object's
// field names (then ErrSlow).
func (s *Scanner) Object(known []string, field func(key []byte) error) error {
	if err := s.open('{'); err != nil {
		return err
	}
	for n := 0; ; n++ {
		key, more, err := s.key(n, true)
		if err != nil || !more {
			return err
		}
		if err = field(key); err == ErrUnknownKey {
			err = s.unknown(key, known)
		}
		if err != nil {
			return err
		}
	}
}

// unknown skips the value of a key no field has, unless encoding/json's
// case-insensitive matching could give it to one of known ("toolcallid"
// folds onto toolCallId as "TYPE" onto type; non-ASCII keys fold in ways of
// their own: those take the slow path).
func (s *Scanner) unknown(key []byte, known []string) error {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return ErrSlow
		}
	}
	for _, k := range known {
		// ASCII letters fold onto each other by the bit 0x20 alone: a key
		// whose first byte differs from k's otherwise is not k's.
		if len(k) == len(key) && (len(k) == 0 || k[0]|0x20 == key[0]|0x20) && bytes.EqualFold(key, []byte(k)) {
			return ErrSlow
		}
	}
	return s.Skip()
}

// Array reads an array: elem decodes each element (at the Scanner's
// position, as any other value).
func (s *Scanner) Array(elem func() error) error {
	if err := s.open('['); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return ErrSlow
		}
		switch s.b[s.i] {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return ErrSlow
		}
	}
}

// Nullable decodes an object field held by pointer, as encoding/json does:
// null sets *p to nil; an object fills the value *p points to, or store
// (zeroed first) when *p is nil. store lets a decoder reuse its own memory
// when what it decodes does not outlive the line.
func Nullable[T any](s *Scanner, p **T, store *T, known []string, field func(v *T, key []byte) error) error {
	if s.PeekNull() {
		*p = nil
		return s.literal("null")
	}
	if *p == nil {
		var zero T
		*store = zero
		*p = store
	}
	v := *p
	return s.Object(known, func(key []byte) error { return field(v, key) })
}

// Names interns the string values a decoder sees on most lines.
type Names map[string]string

// NewNames returns the table of names.
func NewNames(names ...string) Names {
	m := Names{}
	for _, n := range names {
		m[n] = n
	}
	return m
}

func (n Names) get(b []byte) string {
	if s, ok := n[string(b)]; ok {
		return s
	}
	return string(b)
}

// Str decodes a string value into *dst (null leaves it as it is).
func (s *Scanner) Str(dst *string) error { return s.StrIn(dst, nil) }

// StrIn is Str taking the value from names when it is one of them, instead
// of allocating it.
func (s *Scanner) StrIn(dst *string, names Names) error {
	body, plain, err := s.strBody()
	switch {
	case err != nil || body == nil:
		return err
	case plain && names != nil:
		*dst = names.get(body)
	case plain:
		*dst = string(body)
	default:
		*dst = unquote(body)
	}
	return nil
}

// StrCached is Str reusing *last when the plain bytes repeat it (ids that
// every line of a stream repeats).
func (s *Scanner) StrCached(dst, last *string) error {
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

// StrRaw scans a string or null value without making a string of it: body
// is the bytes between the quotes, aliasing the line (nil for null, which
// leaves a string field as it is); when plain they are the text, else
// Unquote gives it. A decoder that makes one string of several bodies
// saves their allocations.
func (s *Scanner) StrRaw() (body []byte, plain bool, err error) { return s.strBody() }

// Unquote is the text of a body StrRaw gave that is not plain, as
// encoding/json decodes it.
func Unquote(body []byte) string { return unquote(body) }

// StrPtr decodes a string or null into a *string field, as encoding/json
// does: null sets it to nil, a string to a new pointer.
func (s *Scanner) StrPtr(dst **string) error {
	if s.PeekNull() {
		*dst = nil
		return s.literal("null")
	}
	v := new(string)
	if *dst != nil {
		*v = **dst
	}
	if err := s.Str(v); err != nil {
		return err
	}
	*dst = v
	return nil
}

// strBody scans a string or null value: body is nil for null.
func (s *Scanner) strBody() (body []byte, plain bool, err error) {
	if s.PeekNull() {
		return nil, false, s.literal("null")
	}
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, ErrSlow
	}
	start := s.i
	if plain, err = s.skipString(); err != nil {
		return nil, false, err
	}
	return s.b[start+1 : s.i-1 : s.i-1], plain, nil
}

// Bool decodes true, false or null (which leaves *dst as it is).
func (s *Scanner) Bool(dst *bool) error {
	if s.i >= len(s.b) || s.b[s.i] != 't' && s.b[s.i] != 'f' && s.b[s.i] != 'n' {
		return ErrSlow
	}
	c := s.b[s.i]
	if err := s.Skip(); err != nil {
		return err
	}
	if c != 'n' {
		*dst = c == 't'
	}
	return nil
}

// Raw sets *dst to the value's bytes, as json.RawMessage does (null
// included). They alias the line: a decoder copies what outlives it.
func (s *Scanner) Raw(dst *json.RawMessage) error {
	start := s.i
	if err := s.Skip(); err != nil {
		return err
	}
	*dst = s.b[start:s.i:s.i]
	return nil
}

// RawObject is Raw with the value, when it is an object, also decoded by
// decode; ok reports that it was.
func (s *Scanner) RawObject(dst *json.RawMessage, decode func() error) (ok bool, err error) {
	start := s.i
	if !s.PeekObject() {
		return false, s.Raw(dst)
	}
	if err := decode(); err != nil {
		return false, err
	}
	*dst = s.b[start:s.i:s.i]
	return true, nil
}

// Std decodes the value into *dst with encoding/json (rare fields of rare
// lines), through a copy so that dst does not escape; what json.Unmarshal
// would merge into *dst it merges too.
func Std[T any](s *Scanner, dst *T) error {
	start := s.i
	if err := s.Skip(); err != nil {
		return err
	}
	v := new(T)
	*v = *dst
	if json.Unmarshal(s.b[start:s.i], v) != nil {
		return ErrSlow
	}
	*dst = *v
	return nil
}

// Skip validates and skips one value.
func (s *Scanner) Skip() error {
	if s.i >= len(s.b) {
		return ErrSlow
	}
	switch c := s.b[s.i]; c {
	case '"':
		_, err := s.skipString()
		return err
	case '{':
		if err := s.open('{'); err != nil {
			return err
		}
		for n := 0; ; n++ {
			_, more, err := s.key(n, false)
			if err != nil || !more {
				return err
			}
			if err := s.Skip(); err != nil {
				return err
			}
		}
	case '[':
		return s.Array(s.Skip)
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
		return ErrSlow
	}
}

// number skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *Scanner) number() error {
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
		return ErrSlow
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return ErrSlow
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return ErrSlow
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
func (s *Scanner) skipString() (plain bool, err error) {
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
			return false, ErrSlow
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return plain, nil
		case c == '\\':
			plain = false
			if i+1 >= len(b) {
				return false, ErrSlow
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return false, ErrSlow
				}
				i += 6
			default:
				return false, ErrSlow
			}
		case c < 0x20:
			return false, ErrSlow
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
