// Scrubbing secret values out of what a relay journals.

package procrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

// scrubber replaces secret values in journal lines with redact.Mask: a line
// that is valid JSON through the shared redactor's JSON scrubbing (it stays
// valid JSON), any other line as text, the values raw and in the forms they
// take inside a JSON string.
type scrubber struct{ r *redact.Redactor }

// newScrubber returns a scrubber of values (those shorter than
// redact.MinLen are ignored), or nil when there is nothing to hide.
func newScrubber(values []string) *scrubber {
	var all []string
	for _, v := range values {
		if v = strings.TrimSpace(v); len(v) >= redact.MinLen {
			all = append(append(all, v), jsonForms(v)...)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return &scrubber{r: redact.New(all...)}
}

// jsonForms are v as it appears inside a JSON string, without the quotes:
// escaped as JavaScript's JSON.stringify, Go's encoding/json (with HTML
// escapes) and an ASCII-only encoder such as Python's json (\uXXXX for
// every non-ASCII character) write it.
func jsonForms(v string) []string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	plain := trimQuotes(b.String())
	q, _ := json.Marshal(v)
	var ascii strings.Builder
	for _, r := range plain {
		if r < utf8.RuneSelf {
			ascii.WriteRune(r)
			continue
		}
		for _, u := range utf16Units(r) {
			fmt.Fprintf(&ascii, `\u%04x`, u)
		}
	}
	return []string{plain, trimQuotes(string(q)), ascii.String()}
}

func utf16Units(r rune) []uint16 {
	if r < 0x10000 {
		return []uint16{uint16(r)}
	}
	r -= 0x10000
	return []uint16{uint16(0xD800 + (r>>10)&0x3FF), uint16(0xDC00 + r&0x3FF)}
}

func trimQuotes(s string) string {
	s = strings.TrimSuffix(s, "\n")
	return strings.TrimSuffix(strings.TrimPrefix(s, `"`), `"`)
}

// line scrubs one complete line (with its line ending).
func (s *scrubber) line(b []byte) []byte {
	body := bytes.TrimRight(b, "\r\n")
	if json.Valid(body) {
		out := s.r.JSON(json.RawMessage(body))
		if bytes.Equal(out, body) {
			return b
		}
		return append(append([]byte(nil), out...), b[len(body):]...)
	}
	return []byte(s.r.String(string(b)))
}

// copyScrubbed copies r to w a complete line at a time, each line scrubbed
// by s before it is written (nil s copies as is). A line longer than
// MaxLineBytes is written in scrubbed pieces that keep back a tail that may
// begin a secret. It returns at EOF (after writing a last unterminated line)
// or at the first error.
func copyScrubbed(w io.Writer, r io.Reader, s *scrubber) error {
	if s == nil {
		_, err := io.Copy(w, r)
		return err
	}
	br := bufio.NewReaderSize(r, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		switch {
		case err == nil || errors.Is(err, io.EOF):
			if len(line) > 0 {
				if _, werr := w.Write(s.line(line)); werr != nil {
					return werr
				}
			}
			line = line[:0]
			if cap(line) > 1<<20 {
				line = nil
			}
			if err != nil {
				return nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			if len(line) > MaxLineBytes { // the reader drops it: scrub it as text
				out, held := s.r.Release(string(line))
				if _, werr := w.Write([]byte(out)); werr != nil {
					return werr
				}
				line = append(line[:0], held...)
			}
		default:
			if len(line) > 0 {
				_, _ = w.Write([]byte(s.r.String(string(line))))
			}
			return err
		}
	}
}
