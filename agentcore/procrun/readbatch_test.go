package procrun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// chunkReader returns its data in reads of the sizes it cycles through.
type chunkReader struct {
	data  []byte
	sizes []int
	i     int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), len(r.data), r.sizes[r.i%len(r.sizes)])
	r.i++
	n = copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// batchedLines is what the Session's reader makes of data read in reads of
// sizes into buffers of size bytes: "L:line" and "T:size" in order.
func batchedLines(t testing.TB, data []byte, sizes []int, max, size int) []string {
	out := make(chan *readBatch)
	done := make(chan error, 1)
	go func() {
		done <- readLines(&chunkReader{data: data, sizes: sizes}, max, size, out)
		close(out)
	}()
	var got []string
	for b := range out {
		if b.tooLong > 0 {
			got = append(got, fmt.Sprint("T:", b.tooLong))
		}
		splitLines(b.buf, max, func(l []byte) { got = append(got, "L:"+string(l)) },
			func(n int) { got = append(got, fmt.Sprint("T:", n)) })
		b.release()
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return got
}

// wantLines is the line contract of Each, written plainly: every line
// (the last one may lack its newline) whose content (without \n or \r\n)
// is over max is skipped and its size with the ending reported; the
// others are passed without their trailing \r and \n unless blank.
func wantLines(data []byte, max int) []string {
	var want []string
	for l := range bytes.Lines(data) {
		complete := l[len(l)-1] == '\n'
		if contentLen(nil, l, complete) > max {
			want = append(want, fmt.Sprint("T:", len(l)))
			continue
		}
		if l = bytes.TrimRight(l, "\r\n"); len(bytes.TrimSpace(l)) > 0 {
			want = append(want, "L:"+string(l))
		}
	}
	return want
}

// eachLines is what Each hands its handler (lines only: it reports no
// sizes).
func eachLines(t testing.TB, data []byte, max int) []string {
	var got []string
	err := eachLine(bufio.NewReaderSize(bytes.NewReader(data), 16), max, slog.New(slog.DiscardHandler), func(l []byte) error {
		got = append(got, "L:"+string(l))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func onlyLines(s []string) []string {
	return slices.DeleteFunc(slices.Clone(s), func(e string) bool { return e[0] != 'L' })
}

// TestReadLinesAsEach: the Session's reader (lines read into buffers
// handed over whole, a partial line moved to the next buffer, grown up to
// the limit and discarded beyond it) gives the lines and skipped sizes of
// the plain contract, and Each the same lines, whatever the read sizes.
func TestReadLinesAsEach(t *testing.T) {
	long := bytes.Repeat([]byte("y"), 300)
	cases := []struct {
		name string
		data string
		max  int
	}{
		{"plain", "{\"a\":1}\n{\"b\":2}\n", 100},
		{"no final newline", "one\ntwo", 100},
		{"blank and crlf", "\n\r\n  \none\r\ntwo\r\r\n\n", 100},
		{"at the limit", "12345\n1234\r\n123456\n12345\r\n", 5},
		{"partial over at eof", "ok\n123456", 5},
		{"cr at eof", "ok\n12345\r", 5},
		{"long lines", "a\n" + string(long) + "\nb\n" + string(long) + "\r\n" + string(long[:50]) + "\nc", 40},
		{"two long in a row", string(long) + "\n" + string(long) + "\nend\n", 40},
		{"long then eof", "a\n" + string(long), 40},
	}
	for _, tt := range cases {
		for _, size := range []int{1, 3, 16, 64, 1024, batchBytes} {
			for _, sizes := range [][]int{{1}, {2, 7}, {13, 1, 64}, {1 << 20}} {
				t.Run(fmt.Sprintf("%s/buf%d/reads%v", tt.name, size, sizes), func(t *testing.T) {
					got := batchedLines(t, []byte(tt.data), sizes, tt.max, size)
					want := wantLines([]byte(tt.data), tt.max)
					if !slices.Equal(got, want) {
						t.Fatalf("session reader:\n got %q\nwant %q", got, want)
					}
					if each := eachLines(t, []byte(tt.data), tt.max); !slices.Equal(each, onlyLines(want)) {
						t.Fatalf("Each:\n got %q\nwant %q", each, onlyLines(want))
					}
				})
			}
		}
	}
}

// FuzzReadLines: the same for any input, limit, buffer and read sizes.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\r\n12345678\nxy"), uint8(4), uint8(3), uint8(5))
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaa\r\n\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\rb\n"), uint8(6), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, data []byte, max, size, read uint8) {
		sizes := []int{int(read%32) + 1, int(read) + 1, int(read/32) + 1}
		got := batchedLines(t, data, sizes, int(max%40), int(size%48)+1)
		want := wantLines(data, int(max%40))
		if !slices.Equal(got, want) {
			t.Fatalf("session reader:\n got %q\nwant %q", got, want)
		}
		if each := eachLines(t, data, int(max%40)); !slices.Equal(each, onlyLines(want)) {
			t.Fatalf("Each:\n got %q\nwant %q", each, onlyLines(want))
		}
	})
}

// BenchmarkReadLines is the reader and the split alone over ~50 MB of
// 150-byte lines in 64 KiB reads (no child, no wire): what the read path
// costs besides the pipe.
func BenchmarkReadLines(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 149), '\n')
	data := bytes.Repeat(line, 50<<20/len(line))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		out := make(chan *readBatch, 4)
		go func() {
			_ = readLines(&chunkReader{data: data, sizes: []int{64 << 10}}, MaxLineBytes, batchBytes, out)
			close(out)
		}()
		n := 0
		for bt := range out {
			splitLines(bt.buf, MaxLineBytes, func([]byte) { n++ }, func(int) {})
			bt.release()
		}
		if n != len(data)/len(line) {
			b.Fatalf("%d lines, want %d", n, len(data)/len(line))
		}
	}
}

// BenchmarkSessionRead is the read path without a parser: the child writes
// ~50 MB of 750-byte lines (the reference stream's mean) to its stdout, a
// Session reads them and its wire counts them. cpu-ms/op is this
// process's CPU time per run (getrusage: reader, loop, scheduler, GC and
// the kernel's pipe copy, not the child's), to set against the parser's
// for as many bytes (BenchmarkReadPath in providers/claude).
func BenchmarkSessionRead(b *testing.B) {
	line := append(append([]byte(`{"type":"stream_event","x":"`), bytes.Repeat([]byte("x"), 718)...), "\"}\n"...)
	data := bytes.Repeat(line, 50<<20/len(line))
	file := filepath.Join(b.TempDir(), "stream")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		b.Fatal(err)
	}
	w := &countWire{}
	s := Session{Provider: "fake", Spec: childSpec(b, "stream", "STREAM="+file), Wire: w}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		w.n = 0
		c0 := processCPU(b)
		err := s.Run(b.Context(), func(agent.Event) {})
		cpu += processCPU(b) - c0
		if !errors.Is(err, agent.ErrRunFailed) || w.n != len(data)/len(line) {
			b.Fatalf("run: %v, %d lines, want %d", err, w.n, len(data)/len(line))
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/op")
}

// countWire counts the lines; it writes nothing and ends no turn.
type countWire struct{ n int }

func (w *countWire) Start(*Conn) error                              { return nil }
func (w *countWire) Line([]byte, *Conn) error                       { w.n++; return nil }
func (w *countWire) Respond(agent.InteractionResponse, *Conn) error { return nil }
func (w *countWire) Interrupt(*Conn) error                          { return ErrNoNative }
func (w *countWire) Outcome(Outcome, *Conn) error                   { return nil }

// processCPU is the CPU time (user and system) this process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
