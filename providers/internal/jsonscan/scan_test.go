package jsonscan

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan/jsonscantest"
)

// TestHasStop checks the 8-byte test against the byte table on words built
// from every byte value in every position and on random words.
func TestHasStop(t *testing.T) {
	check := func(w [8]byte) {
		want := false
		for _, c := range w {
			want = want || strStop[c]
		}
		if got := hasStop(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("hasStop(%q) = %v, want %v", w, got, want)
		}
	}
	for pos := range 8 {
		for c := range 256 {
			for _, fill := range []byte{'a', ' ', '!', '#', '[', ']', 0x7f, '~'} {
				w := [8]byte{fill, fill, fill, fill, fill, fill, fill, fill}
				w[pos] = byte(c)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		var w [8]byte
		for i := range w {
			w[i] = byte(0x20 + rng.IntN(0x60+8)) // mostly printable ASCII, a few stops
		}
		check(w)
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

// TestStrRaw: StrRaw's body, or Unquote of it when not plain, is the
// string json.Unmarshal gives; null gives a nil body, other values ErrSlow.
func TestStrRaw(t *testing.T) {
	for _, c := range []string{`""`, `"plain"`, `"é ok"`, `"a\nb"`, `"\u00e9\ud83d\ude00 \ud800 x\udc00 \/"`, "\"bad \xff\xfe\"", `"\"q\""`} {
		var want string
		if err := json.Unmarshal([]byte(c), &want); err != nil {
			t.Fatal(err)
		}
		s := New([]byte(c))
		body, plain, err := s.StrRaw()
		if err != nil || body == nil || s.End() != nil {
			t.Fatalf("%q: body %q err %v", c, body, err)
		}
		got := string(body)
		if !plain {
			got = Unquote(body)
		}
		if got != want {
			t.Errorf("%q: got %q (plain %v), json.Unmarshal %q", c, got, plain, want)
		}
	}
	s := New([]byte(`null`))
	if body, _, err := s.StrRaw(); body != nil || err != nil {
		t.Errorf("null: body %q err %v", body, err)
	}
	s = New([]byte(`5`))
	if _, _, err := s.StrRaw(); err != ErrSlow {
		t.Errorf("5: err %v, want ErrSlow", err)
	}
}
