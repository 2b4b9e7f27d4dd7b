// Home and End as terminals send them: readline knows only ESC [ H / ESC [ F
// (and ESC O H / ESC O F); tmux, screen, the Linux console and PuTTY send
// ESC [ 1 ~ / ESC [ 4 ~, rxvt ESC [ 7 ~ / ESC [ 8 ~. The editor's input is
// read through keyReader, which turns each of them into the key readline
// moves to the line's start or end by (Ctrl-A, Ctrl-E).

package console

import (
	"bytes"
	"io"

	"github.com/chzyer/readline"
)

var (
	keyLineStart = []byte{readline.CharLineStart} // Ctrl-A
	keyLineEnd   = []byte{readline.CharLineEnd}   // Ctrl-E
)

// homeEnd maps each Home and End sequence to readline's key.
var homeEnd = []struct{ seq, key []byte }{
	{[]byte("\x1b[1~"), keyLineStart}, // tmux, screen, the Linux console, PuTTY
	{[]byte("\x1b[4~"), keyLineEnd},
	{[]byte("\x1b[7~"), keyLineStart}, // rxvt
	{[]byte("\x1b[8~"), keyLineEnd},
	{[]byte("\x1bOH"), keyLineStart}, // xterm, application cursor mode
	{[]byte("\x1bOF"), keyLineEnd},
	{[]byte("\x1b[H"), keyLineStart}, // xterm, normal mode
	{[]byte("\x1b[F"), keyLineEnd},
}

// keyReader reads the terminal with the Home and End sequences translated.
// A read that ends inside a sequence keeps its start until the rest comes.
type keyReader struct {
	in      io.ReadCloser
	held    []byte // the start of a sequence, not yet complete
	out     []byte // translated, not yet returned
	err     error  // in's error, returned once out is empty
	scratch []byte
}

func newKeyReader(in io.ReadCloser) *keyReader {
	return &keyReader{in: in, scratch: make([]byte, 1024)}
}

// Read implements io.Reader.
func (k *keyReader) Read(p []byte) (int, error) {
	for len(k.out) == 0 {
		if k.err != nil {
			return 0, k.err
		}
		n, err := k.in.Read(k.scratch)
		var rest []byte
		k.out, rest = translateKeys(append(k.held, k.scratch[:n]...))
		k.held = append([]byte(nil), rest...)
		if err != nil {
			k.out, k.held, k.err = append(k.out, k.held...), nil, err
		}
	}
	n := copy(p, k.out)
	k.out = k.out[n:]
	return n, nil
}

// Close implements io.Closer: it closes in.
func (k *keyReader) Close() error { return k.in.Close() }

// translateKeys replaces the Home and End sequences in b; rest is b's end
// when it is the start of one, left for more input.
func translateKeys(b []byte) (out, rest []byte) {
	out = make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		if b[i] != readline.CharEsc {
			out = append(out, b[i])
			i++
			continue
		}
		matched, partial := false, false
		for _, k := range homeEnd {
			switch {
			case bytes.HasPrefix(b[i:], k.seq):
				out = append(out, k.key...)
				i += len(k.seq)
				matched = true
			case bytes.HasPrefix(k.seq, b[i:]):
				partial = true
			}
			if matched {
				break
			}
		}
		switch {
		case matched:
		case partial:
			return out, b[i:]
		default:
			out = append(out, b[i])
			i++
		}
	}
	return out, nil
}
