package console

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestKeyReader: every Home and End sequence becomes Ctrl-A or Ctrl-E, read
// whole or a byte at a time (a sequence split across reads); other escapes,
// a lone Escape and text pass unchanged.
func TestKeyReader(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"tmux, screen, Linux console, PuTTY", "ab\x1b[1~X\x1b[4~Y", "ab\x01X\x05Y"},
		{"rxvt", "ab\x1b[7~X\x1b[8~Y", "ab\x01X\x05Y"},
		{"xterm application mode", "ab\x1bOHX\x1bOFY", "ab\x01X\x05Y"},
		{"xterm", "ab\x1b[HX\x1b[FY", "ab\x01X\x05Y"},
		{"others pass", "\x1b[D\x1b[3~\x1b[A\x1bb\x1bOA é", "\x1b[D\x1b[3~\x1b[A\x1bb\x1bOA é"},
		{"a lone escape at the end", "x\x1b", "x\x1b"},
		{"a sequence cut by the end", "x\x1b[1", "x\x1b[1"},
	} {
		for _, split := range []bool{false, true} {
			var in io.Reader = strings.NewReader(c.in)
			if split {
				in = iotest.OneByteReader(in)
			}
			got, err := io.ReadAll(newKeyReader(io.NopCloser(in)))
			if err != nil || string(got) != c.want {
				t.Errorf("%s (split %v): %q (%v), want %q", c.name, split, got, err, c.want)
			}
		}
	}
}
