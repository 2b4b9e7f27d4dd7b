// The record a fake CLI keeps: the test binary, re-executed as the agent,
// writes how it was started and every line it read from stdin.

package providertest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"sync"
	"testing"
)

// Record is what a fake CLI recorded (see OpenRecord).
type Record struct {
	Argv  []string
	Env   []string
	Stdin []json.RawMessage
}

// OpenRecord opens (appending) the record file path for a fake CLI and
// writes its first line: this process's arguments and environment. The fake
// then writes each stdin line it reads to the file as is.
func OpenRecord(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	head, _ := json.Marshal(map[string]any{"argv": os.Args[1:], "env": os.Environ()})
	if _, err := f.Write(append(head, '\n')); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadRecord reads the record of the last start in path: its argv and
// environment, then the stdin lines (a record of several starts keeps the
// first start's head and every stdin line).
func ReadRecord(t testing.TB, path string) Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	for i, l := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if i == 0 {
			var v struct {
				Argv []string `json:"argv"`
				Env  []string `json:"env"`
			}
			if err := json.Unmarshal(l, &v); err != nil {
				t.Fatal(err)
			}
			r.Argv, r.Env = v.Argv, v.Env
			continue
		}
		r.Stdin = append(r.Stdin, json.RawMessage(l))
	}
	return r
}

// RecordLines reads a fake CLI's stdin line by line, appends each line as
// is to rec (the file OpenRecord returned) and hands it to handle, until
// EOF or until handle returns false.
func RecordLines(rec io.Writer, handle func(line []byte) bool) {
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			_, _ = rec.Write(line)
		}
		if err != nil || !handle(line) {
			return
		}
	}
}

// Stdio is a fake CLI that reads its stdin when its script says so: Read
// returns the next line (appended as is to the record, like RecordLines),
// Send writes one line to stdout and flushes it.
type Stdio struct {
	// In is the buffered stdin, for Hang.
	In  *bufio.Reader
	out *bufio.Writer
	rec io.Writer
}

// NewStdio returns the Stdio of this process, recording into rec.
func NewStdio(rec io.Writer) *Stdio {
	return &Stdio{In: bufio.NewReader(os.Stdin), out: bufio.NewWriter(os.Stdout), rec: rec}
}

// Read returns the next stdin line with its newline; false at EOF or on an
// error (a last unterminated line is still returned and recorded).
func (s *Stdio) Read() ([]byte, bool) {
	line, err := s.In.ReadBytes('\n')
	if len(line) > 0 {
		_, _ = s.rec.Write(line)
	}
	return line, err == nil
}

// Send writes line and a newline to stdout and flushes them.
func (s *Stdio) Send(line []byte) {
	_, _ = s.out.Write(line)
	_ = s.out.WriteByte('\n')
	_ = s.out.Flush()
}

// LineWriter writes a fake CLI's messages to its stdout, one JSON line
// each; it is safe for concurrent use.
type LineWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewLineWriter returns a LineWriter on os.Stdout.
func NewLineWriter() *LineWriter { return &LineWriter{w: bufio.NewWriter(os.Stdout)} }

// Send writes v as one JSON line and flushes it.
func (o *LineWriter) Send(v any) {
	b, _ := json.Marshal(v)
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.w.Write(append(b, '\n'))
	_ = o.w.Flush()
}
