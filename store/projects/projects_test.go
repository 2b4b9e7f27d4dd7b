package projects

import (
	"errors"
	"strings"
	"testing"
)

func TestChecksAreUsageErrors(t *testing.T) {
	for name, err := range map[string]error{
		"project name":   Project{Name: "-x", Container: "c"}.Check(),
		"container name": Project{Name: "p", Container: "c-"}.Check(),
		"image":          Project{Name: "p", Container: "c", Image: "-bad"}.Check(),
		"secret key":     ValidSecretKey("1X"),
		"bot secret key": ValidSecretKey("SLACK_BOT_TOKEN"),
	} {
		if !errors.Is(err, ErrUsage) {
			t.Errorf("%s: %v, want ErrUsage", name, err)
		}
	}
	if err := (Project{Name: "web.app", Container: "web-1", Image: "ubuntu:24.04"}).Check(); err != nil {
		t.Errorf("a valid project: %v", err)
	}
	if err := ValidSecretKey("GH_TOKEN"); err != nil {
		t.Errorf("GH_TOKEN: %v", err)
	}
}

func TestAccessList(t *testing.T) {
	got, err := AccessList("channels", " C1, !room:example.org ")
	if err != nil || strings.Join(got, "|") != "C1|!room:example.org" {
		t.Errorf("AccessList = %q, %v", got, err)
	}
	if got, err := AccessList("allow", "  "); got != nil || err != nil {
		t.Errorf("empty: %q, %v", got, err)
	}
	for _, bad := range []string{"C1,,C2", "U 1", "C\x001", strings.Repeat("x", 256)} {
		if _, err := AccessList("allow", bad); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "--allow: invalid id") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestReadSecret(t *testing.T) {
	for in, want := range map[string]string{"s3cret\n": "s3cret", "a\r\n": "a", "two\nlines\n": "two\nlines"} {
		if got, err := ReadSecret(strings.NewReader(in), nil, "K"); err != nil || got != want {
			t.Errorf("ReadSecret(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "empty value", "\n": "empty value", "a\x00b": "NUL", strings.Repeat("x", MaxSecretBytes+1): "longer than"} {
		if _, err := ReadSecret(strings.NewReader(in), nil, "K"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadSecret(%.10q): %v, want %q", in, err, want)
		}
	}
}
