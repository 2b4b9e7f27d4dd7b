package providertest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestRefStream: RefUnit reads the files in name order, compacts the CLI's
// lines, repeats the deltas, takes the client's messages Sent keeps and
// counts the lines' bytes; RefStream repeats the unit to RefStreamBytes,
// and gives nothing for a unit without lines.
func TestRefStream(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines ...string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	b := write("b.jsonl",
		`{"t":0,"dir":"send","msg":{"keep":true}}`,
		`{"t":0,"dir":"send","msg":{"keep":false}}`,
		`{"t":0,"dir":"recv","msg":{ "delta" : 1 }}`,
		`{"t":0,"dir":"meta","msg":{"note":"x"}}`,
		`{"t":0,"dir":"recv","msg":{"end":true}}`)
	a := write("a.jsonl", `{"t":0,"dir":"recv","msg":{"only":1}}`)
	src := RefSource[string]{
		Recv: "recv", Send: "send",
		Line:    func(l []byte) string { return string(l) },
		IsDelta: func(l []byte) bool { return strings.Contains(string(l), "delta") },
		Sent: func(_ testing.TB, msg json.RawMessage) (string, bool) {
			var m struct{ Keep bool }
			_ = json.Unmarshal(msg, &m)
			return "sent", m.Keep
		},
	}
	unit := RefUnit(t, []string{b, a}, src, 3)
	want := []RefRun[string]{
		{File: a, Steps: []string{`{"only":1}`}, Bytes: 11},
		{File: b, Steps: []string{"sent", `{"delta":1}`, `{"delta":1}`, `{"delta":1}`, `{"end":true}`}, Bytes: 3*12 + 13},
	}
	if !reflect.DeepEqual(unit, want) {
		t.Fatalf("unit\n%+v\nwant\n%+v", unit, want)
	}

	runs, size := RefStream(unit)
	per := unit[0].Bytes + unit[1].Bytes
	n := (RefStreamBytes + per - 1) / per // whole units to reach the size
	if int64(len(runs)) != 2*n || size != n*per {
		t.Fatalf("stream of %d runs, %d bytes; want %d runs, %d bytes", len(runs), size, 2*n, n*per)
	}
	if runs[len(runs)-1].File != b || runs[len(runs)-2].File != a {
		t.Errorf("stream does not repeat the unit in order: ends with %s, %s", runs[len(runs)-2].File, runs[len(runs)-1].File)
	}

	noLines := RefUnit(t, []string{write("c.jsonl", `{"t":0,"dir":"send","msg":{"keep":true}}`)}, src, 3)
	if runs, size := RefStream(noLines); runs != nil || size != 0 {
		t.Errorf("a unit without lines gives %d runs, %d bytes", len(runs), size)
	}
}
