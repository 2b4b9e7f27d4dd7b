// Package jsonscantest is what the differential tests of the jsonscan line
// decoders share: JSON texts at the edges of what encoding/json accepts, and
// the check that a decoder gives what json.Unmarshal gives.
package jsonscantest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// SyntaxCases are texts a decoder must judge as encoding/json does: null and
// other values at the top, whitespace, truncations, stray and missing
// punctuation, malformed numbers, literals and escapes, control characters,
// bytes after the value, a byte order mark.
var SyntaxCases = []string{
	` 	{"a" : "x" , "unknown" : [ true , false , null , -0.5e+10 , 0 , {} , [] ] } 
`,
	`null`, ` null `, `nul`, `[]`, `"x"`, `5`, ``, ` `, `{}`, `{`, `}`, `{"a":"x"}x`, `{"a":"x"}{}`,
	`{"a":"x",}`, `{,}`, `{"a"}`, `{"a":}`, `{"a":01}`, `{"a":-}`, `{"a":1.}`, `{"a":1e}`, `{"a":.5}`,
	`{"a":+1}`, `{"a":tru}`, `{"a":nulls}`, `{"a":[1,]}`, `{"a":[,1]}`, `{"a":"\x01"}`, `{"a":"\q"}`,
	`{"a":"\u12"}`, `{"a":"\u12g4"}`, `{"a":"unterminated}`, `{"a":"x\`, `{"a":NaN}`, `{'a':1}`,
	`{"a":"x"}` + "\x00", "\xef\xbb\xbf{}", "{\"a\":\"\xff\"}",
}

// Same fails t unless decode gives for line what json.Unmarshal gives: an
// error exactly when it errs, with the same text, and the same value once
// normalize (nil for none) has cleared what only the decoder sets.
func Same[T any](t testing.TB, line []byte, decode func([]byte, *T) error, normalize func(*T)) {
	t.Helper()
	var want, got T
	wantErr := json.Unmarshal(line, &want)
	gotErr := decode(line, &got)
	if (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
		t.Fatalf("%q: encoding/json err %v, decoder err %v", line, wantErr, gotErr)
	}
	if normalize != nil {
		normalize(&got)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("%q:\nencoding/json %+v\ndecoder       %+v", line, want, got)
	}
}
