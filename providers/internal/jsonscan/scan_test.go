package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"
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

// validCases are texts that json.Valid accepts or refuses for the reasons a
// walker must catch.
var validCases = []string{
	`{}`, ` {"a" : [ true , false , null , -0.5e+10 , 0 , {} , [] , "x\u00e9\ud800\/" ] } `, `null`, `"x"`, `5`, `[]`,
	"{\"a\":\"\xff\"}", ``, ` `, `{`, `}`, `{"a":1}x`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{"a":01}`, `{"a":-}`,
	`{"a":1.}`, `{"a":1e}`, `{"a":.5}`, `{"a":+1}`, `{"a":tru}`, `{"a":nulls}`, `{"a":[1,]}`, `{"a":[,1]}`,
	`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"x`, `{"a":NaN}`, `{'a':1}`, "{}\x00",
}

// TestSkipMatchesValid: TopNull or Skip, then End, accept exactly what
// json.Valid accepts.
func TestSkipMatchesValid(t *testing.T) {
	cases := validCases
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
