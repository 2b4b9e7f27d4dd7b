// Scrubbing secret values out of what a relay journals.

package procrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"
)

// scrubber replaces secret values in text, raw and in the forms they take
// inside a JSON string.
type scrubber struct {
	r *strings.Replacer
	// longest is the longest form replaced.
	longest int
}

// newScrubber returns a scrubber of values (those shorter than minMaskLen
// are ignored), or nil when there is nothing to hide.
func newScrubber(values []string) *scrubber {
	seen := map[string]bool{}
	var forms []string
	add := func(f string) {
		if len(f) >= minMaskLen && !seen[f] {
			seen[f] = true
			forms = append(forms, f)
		}
	}
	for _, v := range values {
		if len(v) < minMaskLen {
			continue
		}
		add(v)
		for _, f := range jsonForms(v) {
			add(f)
		}
	}
	if len(forms) == 0 {
		return nil
	}
	// Longer first: a value containing another is replaced whole.
	sort.Slice(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
	oldnew := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		oldnew = append(oldnew, f, "***")
	}
	return &scrubber{r: strings.NewReplacer(oldnew...), longest: len(forms[0])}
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

// replace scrubs b.
func (s *scrubber) replace(b []byte) []byte {
	return []byte(s.r.Replace(string(b)))
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
				if _, werr := w.Write(s.replace(line)); werr != nil {
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
			if len(line) > MaxLineBytes {
				m := s.replace(line)
				keep := min(len(m), s.longest-1)
				if _, werr := w.Write(m[:len(m)-keep]); werr != nil {
					return werr
				}
				line = append(line[:0], m[len(m)-keep:]...)
			}
		default:
			if len(line) > 0 {
				_, _ = w.Write(s.replace(line))
			}
			return err
		}
	}
}
