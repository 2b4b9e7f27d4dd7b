// The Session's stdout reader: lines read into pooled buffers and handed
// over a read at a time, split once, by the loop.

package procrun

import (
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
)

// The sizes of the pooled read buffers: batchBytes, the pipe's default
// capacity, while the agent writes less than a buffer at a time (what a
// run waiting on a quiet agent holds), bigBatchBytes once a read filled
// one (a fast stream: fewer, larger hand-overs; see pipeBytes).
const (
	batchBytes    = 64 << 10
	bigBatchBytes = 4 * batchBytes
)

// readBatch is what the reader hands the loop at once: the complete lines
// of one read (each ending in '\n', the last one without it at EOF) or one
// raw chunk, in the buffer they were read into, after the size of a line
// skipped as over the limit (tooLong) if one ended just before them. The
// loop owns it until it calls release: the lines stay valid until then,
// and only until then (the buffer is read into again).
type readBatch struct {
	buf     []byte // the lines (or the chunk): a prefix of own
	own     []byte // the whole buffer
	tooLong int
}

// The pools of every Session's read buffers, by size.
var (
	batchPool    = sync.Pool{New: func() any { return &readBatch{own: make([]byte, batchBytes)} }}
	bigBatchPool = sync.Pool{New: func() any { return &readBatch{own: make([]byte, bigBatchBytes)} }}
)

// poolOf is the pool of buffers of size bytes, nil for other sizes.
func poolOf(size int) *sync.Pool {
	switch size {
	case batchBytes:
		return &batchPool
	case bigBatchBytes:
		return &bigBatchPool
	}
	return nil
}

// getBatch returns an empty batch of size bytes, pooled for the pool's
// sizes.
func getBatch(size int) *readBatch {
	pool := poolOf(size)
	if pool == nil {
		return &readBatch{own: make([]byte, size)}
	}
	b := pool.Get().(*readBatch)
	b.buf, b.tooLong = nil, 0
	return b
}

// release gives b's buffer back to be read into again. A buffer grown for
// a long line is left to the collector. With the race detector on (as
// the tests run) the buffer is overwritten first, so that a wire that
// kept a slice of a line past its call shows wrong bytes in its output.
func (b *readBatch) release() {
	pool := poolOf(len(b.own))
	if pool == nil {
		return
	}
	if poisonReleased {
		for i := range b.own {
			b.own[i] = 0xA5
		}
	}
	b.buf, b.tooLong = nil, 0
	pool.Put(b)
}

// readLines reads r until EOF and sends what each read completed: the
// complete lines go in the buffer they were read into, before the next
// read (which may block), so a line is never held back waiting for the
// next one; the partial line at the end moves to the next buffer, of size
// bytes, or 4*size after a read that filled the space it was given. A
// partial line that fills a buffer grows it, up to limit+2 bytes (a line
// of limit bytes and its \r\n); beyond that its content is over limit
// whatever ends it, so it is discarded up to its newline and its size
// (with the line ending) is sent as tooLong. A complete line over limit is
// left to splitLines. readLines returns nil at EOF (after the last partial
// line) and the read error otherwise.
func readLines(r io.Reader, limit, size int, out chan<- *readBatch) error {
	var (
		cur        = getBatch(size)
		n          int // bytes of cur.own filled: the partial line
		discarding bool
		discarded  int // bytes of the line being discarded so far
		tooLong    int // a discarded line not sent yet
	)
	defer func() { cur.release() }()
	for {
		if n == len(cur.own) {
			if n >= limit+2 {
				discarding, discarded, n = true, n, 0
			} else {
				grown := getBatch(min(2*n, limit+2))
				copy(grown.own, cur.own[:n])
				cur.release()
				cur = grown
			}
		}
		m, err := r.Read(cur.own[n:])
		filled := n+m == len(cur.own)
		from := n // where the unscanned bytes start
		n += m
		if discarding && m > 0 {
			i := bytes.IndexByte(cur.own[:n], '\n')
			if i < 0 {
				discarded += n
				n = 0
			} else {
				discarding, tooLong = false, discarded+i+1
				discarded = 0
				n = copy(cur.own, cur.own[i+1:n])
				from = 0
			}
		}
		if e := bytes.LastIndexByte(cur.own[from:n], '\n'); e >= 0 && !discarding {
			e += from + 1
			want := size
			if filled {
				want = 4 * size
			}
			if n-e >= want { // a long partial line: room to grow, bounded as above
				want = max(n-e+1, min(2*(n-e), limit+2))
			}
			next := getBatch(want)
			rest := copy(next.own, cur.own[e:n])
			cur.buf, cur.tooLong = cur.own[:e], tooLong
			out <- cur
			cur, n, tooLong = next, rest, 0
		} else if tooLong > 0 {
			out <- &readBatch{tooLong: tooLong}
			tooLong = 0
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if discarding {
				out <- &readBatch{tooLong: discarded}
			} else if n > 0 {
				cur.buf = cur.own[:n]
				out <- cur
				cur = getBatch(size)
			}
			return nil
		default:
			return err
		}
	}
}

// splitLines hands line every non-blank line of buf (complete lines and,
// last, one without its newline) without its line ending, and tooLong the
// size (with the line ending) of each line whose content is over max, as
// Each does. A line is a slice of buf.
func splitLines(buf []byte, max int, line func([]byte), tooLong func(int)) {
	for len(buf) > 0 {
		l := buf
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			l, buf = buf[:i+1], buf[i+1:]
		} else {
			buf = nil
		}
		if len(l) > max && contentLen(nil, l, l[len(l)-1] == '\n') > max {
			tooLong(len(l))
			continue
		}
		l = trimEnding(l)
		if blank(l) {
			continue
		}
		line(l[:len(l):len(l)])
	}
}

// trimEnding is bytes.TrimRight(l, "\r\n") without the cutset's cost.
func trimEnding(l []byte) []byte {
	for len(l) > 0 && (l[len(l)-1] == '\n' || l[len(l)-1] == '\r') {
		l = l[:len(l)-1]
	}
	return l
}

// blank reports whether l is empty or white space only (as
// bytes.TrimSpace sees it), looking at its first byte alone when that is
// printable ASCII.
func blank(l []byte) bool {
	if len(l) == 0 {
		return true
	}
	if c := l[0]; c > ' ' && c < 0x7f {
		return false
	}
	return len(bytes.TrimSpace(l)) == 0
}

// sendChunks reads r until EOF and sends every chunk read (at most
// ChunkBytes, as the pipe delivered it) in a pooled buffer. It returns nil
// at EOF and the read error otherwise, as readChunks does.
func sendChunks(r io.Reader, out chan<- *readBatch) error {
	for {
		b := getBatch(batchBytes)
		n, err := r.Read(b.own[:ChunkBytes])
		if n > 0 {
			b.buf = b.own[:n]
			out <- b
		} else {
			b.release()
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF), errors.Is(err, os.ErrClosed):
			return nil
		default:
			return err
		}
	}
}
