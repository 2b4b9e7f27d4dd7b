// Command refstream writes the Claude stream-json reference stream of
// BenchmarkParseReference and BenchmarkReadPath (issue 19): the CLI stdout
// lines of the reference transcripts, each text/thinking/input-json delta
// line repeated 8 times, the whole unit repeated until the output reaches
// the target size.
//
//	go run ./providers/claude/internal/refstream -o /tmp/claude-ref.jsonl
//	CLAUDE_STREAM_BENCH=/tmp/claude-ref.jsonl go test -run '^$' -bench 'ParseReference|ReadPath' ./providers/claude/
//
// (see providers/claude/bench_test.go for running the read path on a host
// whose temporary directory is mounted noexec).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

func main() {
	dir := flag.String("transcripts", "../shared/reference/claude-code/transcripts", "directory of *.jsonl captures")
	out := flag.String("o", "/tmp/claude-stream-reference.jsonl", "output file")
	size := flag.Int64("size", 50<<20, "minimum output size in bytes")
	repeat := flag.Int("delta-repeat", 8, "times each delta line is repeated")
	flag.Parse()
	if err := run(*dir, *out, *size, *repeat); err != nil {
		fmt.Fprintln(os.Stderr, "refstream:", err)
		os.Exit(1)
	}
}

func run(dir, out string, size int64, repeat int) error {
	unit, err := buildUnit(dir, repeat)
	if err != nil {
		return err
	}
	if len(unit) == 0 {
		return errors.New("no stdout lines in " + dir)
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n, units int64
	for n < size {
		if _, err := w.Write(unit); err != nil {
			f.Close()
			return err
		}
		n += int64(len(unit))
		units++
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("%s: %d bytes, %d units of %d bytes\n", out, n, units, len(unit))
	return nil
}

// buildUnit returns one unit: every transcript's stdout lines in file-name
// order, delta lines repeated, each line ending in a newline.
func buildUnit(dir string, repeat int) ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var unit bytes.Buffer
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, err
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			line = stdoutLine(bytes.TrimSpace(line))
			if len(line) == 0 {
				continue
			}
			n := 1
			if isDelta(line) {
				n = repeat
			}
			for range n {
				unit.Write(line)
				unit.WriteByte('\n')
			}
		}
	}
	return unit.Bytes(), nil
}

// stdoutLine returns the CLI stdout line of a capture line: the line itself
// for raw print-mode stdout, the msg of a cli->host line of a drive.py
// capture, nil for anything else.
func stdoutLine(line []byte) []byte {
	if len(line) == 0 {
		return nil
	}
	var c struct {
		Dir *string         `json:"dir"`
		Msg json.RawMessage `json:"msg"`
	}
	if json.Unmarshal(line, &c) != nil || c.Dir == nil {
		return line
	}
	if *c.Dir != "cli->host" {
		return nil
	}
	return c.Msg
}

// isDelta reports a text, thinking or input-json delta stream event.
func isDelta(line []byte) bool {
	var r struct {
		Type  string `json:"type"`
		Event struct {
			Type  string `json:"type"`
			Delta struct {
				Type string `json:"type"`
			} `json:"delta"`
		} `json:"event"`
	}
	if json.Unmarshal(line, &r) != nil || r.Type != "stream_event" || r.Event.Type != "content_block_delta" {
		return false
	}
	switch r.Event.Delta.Type {
	case "text_delta", "thinking_delta", "input_json_delta":
		return true
	}
	return false
}
