// Raw stdout chunks → text deltas; the combined output tail.

package plain

import (
	"sync"
	"unicode/utf8"
)

// chunker turns raw output chunks into display text: terminal escape
// sequences (CSI, OSC, two-byte ESC) and carriage returns are dropped, and an
// incomplete UTF-8 rune or escape sequence at a chunk's end is held until the
// next chunk, so no delta splits a character. Blank lines and Markdown pass
// unchanged: there is no line splitting.
type chunker struct {
	pending []byte
}

// maxPending bounds an escape sequence: one without a terminator within it
// is not a sequence, and its ESC is dropped.
const maxPending = 256

// feed returns the text ready to emit after chunk b.
func (c *chunker) feed(b []byte) string {
	buf := append(c.pending, b...)
	c.pending = nil
	out := make([]byte, 0, len(buf))
	i := 0
	for i < len(buf) {
		ch := buf[i]
		switch {
		case ch == '\r':
			i++
		case ch == 0x1b:
			n, st := escapeLen(buf[i:])
			switch st {
			case escIncomplete:
				c.pending = append([]byte(nil), buf[i:]...)
				return string(out)
			case escInvalid:
				i++ // no terminator within maxPending: drop the lone ESC
			default:
				i += n
			}
		case ch < utf8.RuneSelf:
			out = append(out, ch)
			i++
		default:
			if !utf8.FullRune(buf[i:]) {
				c.pending = append([]byte(nil), buf[i:]...)
				return string(out)
			}
			_, n := utf8.DecodeRune(buf[i:])
			out = append(out, buf[i:i+n]...)
			i += n
		}
	}
	return string(out)
}

// flush returns what is still held (at EOF).
func (c *chunker) flush() string {
	p := c.pending
	c.pending = nil
	if len(p) == 0 || p[0] == 0x1b {
		return ""
	}
	return string(p)
}

type escState int

const (
	escComplete escState = iota
	escIncomplete
	escInvalid
)

// escapeLen returns the length of the escape sequence at b[0] == ESC and its
// state: complete, incomplete (more input may finish it), or invalid (no
// terminator within maxPending bytes). Deciding on a bounded prefix makes the
// result independent of how the output was split into reads.
func escapeLen(b []byte) (int, escState) {
	if len(b) < 2 {
		return 0, escIncomplete
	}
	limit := min(len(b), maxPending)
	switch b[1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7E
		for i := 2; i < limit; i++ {
			if b[i] >= 0x40 && b[i] <= 0x7e {
				return i + 1, escComplete
			}
		}
	case ']': // OSC: ends with BEL or ESC \
		for i := 2; i < limit; i++ {
			if b[i] == 0x07 {
				return i + 1, escComplete
			}
			if b[i] == 0x1b && i+1 < limit && b[i+1] == '\\' {
				return i + 2, escComplete
			}
		}
	default:
		return 2, escComplete
	}
	if len(b) >= maxPending {
		return 0, escInvalid
	}
	return 0, escIncomplete
}

// tailBuffer keeps the last max bytes written, from stdout and stderr
// together; safe for concurrent use.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	for len(b) > 0 && !utf8.RuneStart(b[0]) { // the cut may split a rune
		b = b[1:]
	}
	var c chunker
	return c.feed(b)
}
