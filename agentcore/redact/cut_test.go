package redact_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

// truncate cuts s to at most n bytes on a rune boundary and marks the cut, as
// agent.Truncate and procrun.Excerpt do.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + redact.CutMark
}

// tail keeps the last n bytes of s and marks the cut, as procrun.StderrTail does.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	k := len(s) - n
	for k < len(s) && !utf8.RuneStart(s[k]) {
		k++
	}
	return redact.CutMark + s[k:]
}

// leaks returns the first piece of secret (MinCutLen bytes or more) found in s.
func leaks(s, secret string) string {
	for n := len(secret); n >= redact.MinCutLen; n-- {
		for i := 0; i+n <= len(secret); i++ {
			if strings.Contains(s, secret[i:i+n]) {
				return secret[i : i+n]
			}
		}
	}
	return ""
}

// TestCutEveryPosition: a text holding a secret, cut at every byte (its head
// kept with a trailing mark, or its tail with a leading one, alone or inside a
// longer line), keeps no piece of the secret of MinCutLen bytes or more, and
// the text around it is kept; a piece shorter than that is left alone.
func TestCutEveryPosition(t *testing.T) {
	const secret = "sk-ant-api03-ABCDEFGHijklmnop"
	const uni = "pässwörd-ünï-42"
	r := redact.New(secret, uni, "other-secret-value")
	for _, sec := range []string{secret, uni} {
		const before, after = "auth header: ", " and more text"
		full := before + sec + after
		for n := 0; n <= len(full); n++ {
			head := truncate(full, n)
			got := r.Cut(head)
			if p := leaks(got, sec); p != "" {
				t.Errorf("Cut(%q) = %q keeps %q", head, got, p)
			}
			kept := strings.TrimSuffix(head, redact.CutMark)
			if piece := len(kept) - len(before); piece > 0 && piece < redact.MinCutLen && got != head {
				t.Errorf("Cut(%q) = %q: a %d-byte piece was masked", head, got, piece)
			}
			if len(kept) >= len(before) && !strings.HasPrefix(got, before) {
				t.Errorf("Cut(%q) = %q lost the text before the secret", head, got)
			}
			if line := "title: " + head + " (2 more)"; leaks(r.Cut(line), sec) != "" {
				t.Errorf("Cut(%q) = %q keeps a piece", line, r.Cut(line))
			}

			tl := tail(full, n)
			got = r.Cut(tl)
			if p := leaks(got, sec); p != "" {
				t.Errorf("Cut(%q) = %q keeps %q", tl, got, p)
			}
			if len(tl) > len(after)+len(redact.CutMark) && !strings.HasSuffix(got, after) {
				t.Errorf("Cut(%q) = %q lost the text after the secret", tl, got)
			}
			if line := "claude: exit status 1: " + tl + " | done"; leaks(r.Cut(line), sec) != "" {
				t.Errorf("Cut(%q) = %q keeps a piece", line, r.Cut(line))
			}
		}
	}
}

// TestCutLeavesOrdinaryText: marks in ordinary text change nothing, and Cut
// without a mark is String.
func TestCutLeavesOrdinaryText(t *testing.T) {
	r := redact.New("sk-ant-api03-ABCDEFGH")
	for _, s := range []string{"wait… what", "…", "…… sk-", "Running tests…", "sk-a b…"} {
		if got := r.Cut(s); got != s {
			t.Errorf("Cut(%q) = %q", s, got)
		}
	}
	for in, want := range map[string]string{
		"key sk-ant-api03-ABCDEFGH":         "key [redacted]",
		"key sk-ant-api03-ABCDEFGH sk-ant…": "key [redacted] [redacted]…",
		"…DEFGH then sk-ant-api03…":         "…[redacted] then [redacted]…",
		"sk-ant-api03-ABCDEFGH…CDEFGH":      "[redacted]…[redacted]",
	} {
		if got := r.Cut(in); got != want {
			t.Errorf("Cut(%q) = %q, want %q", in, got, want)
		}
	}
	var zero redact.Redactor
	if zero.Cut("sk-ant…") != "sk-ant…" {
		t.Error("the zero Redactor changed text")
	}
}

// TestJSONCut: strings of a JSON value are scrubbed with Cut.
func TestJSONCut(t *testing.T) {
	r := redact.New("sk-ant-api03-ABCDEFGH")
	out := r.JSON(json.RawMessage(`{"title":"curl -H 'x-api-key: sk-ant-api03-ABC…","n":1}`))
	if want := `{"title":"curl -H 'x-api-key: [redacted]…","n":1}`; string(out) != want {
		t.Errorf("JSON = %s, want %s", out, want)
	}
	plain := json.RawMessage(`{"a": "wait…"}`)
	if out := r.JSON(plain); string(out) != string(plain) {
		t.Errorf("JSON(%s) = %s, want it unchanged", plain, out)
	}
}

// TestHandlerCut: a logged excerpt or stderr tail cut inside a secret keeps no
// piece of it, in the message, in attributes and in errors.
func TestHandlerCut(t *testing.T) {
	const secret = "s3cr3t-token-value"
	r := redact.New(secret)
	for n := 1; n < len(secret); n++ {
		var buf bytes.Buffer
		log := slog.New(redact.Handler(slog.NewTextHandler(&buf, nil), r))
		line := `{"auth":"` + secret + `"}`
		log.Warn("stdout line skipped "+truncate(line, 9+n), "excerpt", truncate(line, 9+n),
			"err", errorString("exit status 1: "+tail(secret+" failed", len(secret)-n+7)))
		if p := leaks(buf.String(), secret); p != "" {
			t.Fatalf("cut at %d: log keeps %q: %s", n, p, buf.String())
		}
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }
