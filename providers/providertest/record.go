// The record a fake CLI keeps: the test binary, re-executed as the agent,
// writes how it was started and every line it read from stdin.

package providertest

import (
	"bytes"
	"encoding/json"
	"os"
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
