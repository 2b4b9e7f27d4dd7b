package fakehttp

import (
	"bufio"
	"errors"
	"io"
	"strings"
	"testing"
)

type req struct{ text string }
type reply struct{ text string }
type script func(*req) *reply

func say(s string) script { return func(*req) *reply { return &reply{s} } }

func TestScripts(t *testing.T) {
	hello := When(func(r *req) string { return r.text }, "ell", say("hi"))
	seq := Sequence(say("one"), say("two"))
	scripts := []script{hello, seq}
	var got []string
	for _, r := range []string{"hello", "x", "hello", "y", "z"} {
		got = append(got, Pick(scripts, &req{r}).text)
	}
	if want := "hi one hi two two"; strings.Join(got, " ") != want {
		t.Errorf("replies %q, want %q", strings.Join(got, " "), want)
	}
	if r := Pick([]script{hello}, &req{"nope"}); r != nil {
		t.Errorf("no script answers, got %+v", r)
	}
}

func TestWords(t *testing.T) {
	if got := strings.Join(Words(3), ""); got != "word00 word01 word02 " {
		t.Errorf("Words(3) = %q", got)
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		s    string
		want string
	}{{"", ""}, {"ab", "a|b"}, {"abcdefg", "abc|def|g"}, {`{"k":1}`, `{"k|":1|}`}} {
		if got := strings.Join(Split(c.s, 3), "|"); got != c.want {
			t.Errorf("Split(%q, 3) = %q, want %q", c.s, got, c.want)
		}
	}
	if got := NoScenario(strings.Repeat("x", 300)); len(got) != 2 || got[1] != `"`+strings.Repeat("x", 200)+`…"` {
		t.Errorf("NoScenario = %q", got)
	}
}

func TestRequestsWhere(t *testing.T) {
	s := Listen[string]("t", nil)
	defer s.Close()
	for _, r := range []string{"a1", "b", "a2"} {
		s.Record(r)
	}
	got := s.RequestsWhere(func(r string) bool { return strings.HasPrefix(r, "a") })
	if strings.Join(got, ",") != "a1,a2" {
		t.Errorf("RequestsWhere = %q, want [a1 a2]", got)
	}
	if got := s.RequestsWhere(func(string) bool { return false }); got != nil {
		t.Errorf("none kept = %q", got)
	}
}

func TestAwaitLines(t *testing.T) {
	r := bufio.NewReader(strings.NewReader("data: x1\n\ndata: y\ndata: x2\nrest\n"))
	if err := AwaitLines(r, "x", 2); err != nil {
		t.Fatal(err)
	}
	if rest, _ := r.ReadString('\n'); rest != "rest\n" {
		t.Errorf("read past the second line: next is %q", rest)
	}
	if err := AwaitLines(bufio.NewReader(strings.NewReader("x\n")), "x", 2); !errors.Is(err, io.EOF) {
		t.Errorf("short stream: %v, want EOF", err)
	}
}
