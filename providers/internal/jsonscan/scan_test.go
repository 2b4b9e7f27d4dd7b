package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
)

// TestHasStop: the 8-byte test finds a stop byte at every position, and
// none in runs of plain bytes.
func TestHasStop(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			b := bytes.Repeat([]byte{'a'}, 8)
			b[pos] = byte(c)
			if got := hasStop(binary.LittleEndian.Uint64(b)); got != strStop[c] {
				t.Fatalf("byte %#x at %d: hasStop %v, want %v", c, pos, got, strStop[c])
			}
		}
	}
}

// TestSkipMatchesValid: TopNull or Skip, then End, accept exactly what
// json.Valid accepts.
func TestSkipMatchesValid(t *testing.T) {
	cases := slices.Clone(jsonscantest.SyntaxCases)
	deep := bytes.Repeat([]byte(`{"a":`), MaxDepth)
	cases = append(cases, string(deep)+"1"+string(bytes.Repeat([]byte("}"), MaxDepth)))
	cases = append(cases, `{"a":`+string(deep)+"1"+string(bytes.Repeat([]byte("}"), MaxDepth+1)))
	cases = append(cases, "["+string(deep)+"1"+string(bytes.Repeat([]byte("}"), MaxDepth))+"]")
	for _, c := range cases {
		s := New([]byte(c))
		var err error
		if !s.TopNull() {
			err = s.Skip()
		}
		if err == nil {
			err = s.End()
		}
		if (err == nil) != json.Valid([]byte(c)) {
			t.Errorf("%.40q: Skip/End err %v, json.Valid %v", c, err, json.Valid([]byte(c)))
		}
	}
}
