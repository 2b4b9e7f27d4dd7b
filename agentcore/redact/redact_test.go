package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

func TestString(t *testing.T) {
	r := redact.New("xoxb-123-456-secret", "hunter22", "x", "  ")
	r.Add("xoxb-123-456") // a prefix of another secret: the longer one wins
	for in, want := range map[string]string{
		"token xoxb-123-456-secret here": "token [redacted] here",
		"pw=hunter22;pw2=hunter22":       "pw=[redacted];pw2=[redacted]",
		"x marks xoxb-123-456 alone":     "x marks [redacted] alone",
		"nothing to hide":                "nothing to hide",
	} {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var zero redact.Redactor
	if zero.String("hunter22") != "hunter22" {
		t.Error("the zero Redactor changed text")
	}
}

func TestHandler(t *testing.T) {
	var buf bytes.Buffer
	r := redact.New("s3cr3t-token")
	log := slog.New(redact.Handler(slog.NewTextHandler(&buf, nil), r)).With("url", "postgres://u:s3cr3t-token@h/db")
	log.Info("sent s3cr3t-token", "err", errors.New("auth s3cr3t-token failed"), slog.Group("g", "k", "s3cr3t-token"), "n", 3)
	out := buf.String()
	if strings.Contains(out, "s3cr3t-token") {
		t.Fatalf("secret logged: %s", out)
	}
	for _, want := range []string{"sent [redacted]", "auth [redacted] failed", "g.k=[redacted]", "n=3", "u:[redacted]@h"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q: %s", want, out)
		}
	}
}

func BenchmarkString(b *testing.B) {
	r := redact.New("xoxb-123-456-secret", "hunter22", "another-secret-value", "project-secret-1")
	text := strings.Repeat("Here is some ordinary agent output with code and words. ", 200)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.String(text)
	}
}

// release feeds pieces through a Stream and returns every released piece and
// the flushed end.
func release(r *redact.Redactor, pieces ...string) (out []string, all string) {
	st := r.Stream()
	for _, p := range pieces {
		out = append(out, st.Write(p))
	}
	out = append(out, st.Flush())
	return out, strings.Join(out, "")
}

func TestStream(t *testing.T) {
	const secret = "sk-live-ABCDEF123456"
	r := redact.New(secret, "hunter2hunter2")
	for _, tc := range []struct {
		name   string
		pieces []string
		want   string
	}{
		{"split in two", []string{"the key is sk-live-AB", "CDEF123456, done"}, "the key is [redacted], done"},
		{"split in three", []string{"key sk-", "live-ABCDEF", "123456!"}, "key [redacted]!"},
		{"one byte at a time", strings.Split("a sk-live-ABCDEF123456 b hunter2hunter2.", ""), "a [redacted] b [redacted]."},
		{"secret at the very end", []string{"ends with sk-live-ABC", "DEF123456"}, "ends with [redacted]"},
		{"prefix that is not a secret", []string{"sk-live-ABC", "xyz and sk-", "li"}, "sk-live-ABCxyz and sk-li"},
		{"two secrets back to back", []string{"hunter2hun", "ter2sk-live-ABCDEF12345", "6"}, "[redacted][redacted]"},
		{"no secret", []string{"plain ", "text ", "only"}, "plain text only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, got := release(r, tc.pieces...)
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if whole := r.String(strings.Join(tc.pieces, "")); got != whole {
				t.Errorf("stream %q differs from String of the whole %q", got, whole)
			}
		})
	}
}

// TestStreamNeverReleasesSecret: no released piece, and no concatenation of
// released pieces, contains a secret; a held prefix is released byte-exact
// once the next piece shows it is not one.
func TestStreamNeverReleasesSecret(t *testing.T) {
	const secret = "ghp_TOKENvalue42"
	r := redact.New(secret)
	out, all := release(r, "say ghp_", "TOK", "ENval", "ue42 now")
	if strings.Contains(all, secret) || strings.Contains(strings.Join(out, "|"), "ghp_") {
		t.Fatalf("released %q", out)
	}
	if out[0] != "say " {
		t.Errorf("first release %q: the possible prefix was not held back", out[0])
	}
	out, all = release(r, "say ghp_", "TOKEN and more")
	if all != "say ghp_TOKEN and more" || out[1] != "ghp_TOKEN and more" {
		t.Errorf("a prefix that is no secret: %q", out)
	}
	// Nothing is held when no tail could start a secret.
	st := r.Stream()
	if got := st.Write("no prefix here"); got != "no prefix here" || st.Pending() {
		t.Errorf("Write = %q, pending %v", got, st.Pending())
	}
}

// TestStreamOverlapping: secrets that share prefixes or contain each other.
func TestStreamOverlapping(t *testing.T) {
	r := redact.New("abcdefgh", "cdefghij12", "abcdefghXYZ", "efgh12")
	for _, pieces := range [][]string{
		{"xxabcdefghXY", "Z"},            // the longest at a position wins
		{"xxabcdefghXY", "Q"},            // falls back to the shorter one
		{"xxabcdefgh", "ij12"},           // overlap: leftmost first
		{"xxabcd", "efgh", "ij", "12yy"}, // same, in many pieces
		{"cdefghij1", "2 and efgh1", "2"},
	} {
		_, got := release(r, pieces...)
		if whole := r.String(strings.Join(pieces, "")); got != whole {
			t.Errorf("%q: stream %q, String %q", pieces, got, whole)
		}
		for _, s := range []string{"abcdefgh", "cdefghij12", "efgh12"} {
			if strings.Contains(got, s) {
				t.Errorf("%q: released %q holds %q", pieces, got, s)
			}
		}
	}
}

func TestStreamUnicode(t *testing.T) {
	const secret = "pässwörd-ünïcødé"
	r := redact.New(secret)
	pieces := []string{"🔑 das Passwort ist pä", "sswö", "rd-ünïcødé — ✓ 日本語"}
	out, got := release(r, pieces...)
	if got != "🔑 das Passwort ist [redacted] — ✓ 日本語" {
		t.Errorf("got %q", got)
	}
	for _, o := range out {
		if !utf8.ValidString(o) {
			t.Errorf("piece %q is not valid UTF-8", o)
		}
	}
}

// TestStreamSeesAddedSecrets: a secret added while a stream runs applies to
// what the stream has not released yet.
func TestStreamSeesAddedSecrets(t *testing.T) {
	r := redact.New()
	st := r.Stream()
	a := st.Write("before ")
	r.Add("project-secret-1")
	b := st.Write("then project-se")
	c := st.Write("cret-1.")
	if got := a + b + c + st.Flush(); got != "before then [redacted]." {
		t.Errorf("got %q", got)
	}
}

// TestStreamMatchesString: for random texts cut at random places, the stream
// releases exactly what String makes of the whole.
func TestStreamMatchesString(t *testing.T) {
	secrets := []string{"aab-aab", "aab-aac", "ab-aab-aab", "b-aab-", "ccccccc"}
	r := redact.New(secrets...)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abc-"
	for range 5000 {
		n := rng.IntN(60)
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[rng.IntN(len(alphabet))])
		}
		text := b.String()
		var pieces []string
		for rest := text; rest != ""; {
			k := min(len(rest), 1+rng.IntN(8))
			pieces = append(pieces, rest[:k])
			rest = rest[k:]
		}
		out, got := release(r, pieces...)
		if want := r.String(text); got != want {
			t.Fatalf("pieces %q: stream %q, String %q", pieces, got, want)
		}
		// No prefix of the released text reveals a secret either.
		sofar := ""
		for _, o := range out {
			sofar += o
			for _, s := range secrets {
				if strings.Contains(sofar, s) {
					t.Fatalf("pieces %q: released %q holds %q", pieces, sofar, s)
				}
			}
		}
	}
}

func TestJSON(t *testing.T) {
	const secret = `tok"en\with<html>&`
	r := redact.New(secret, "plain-secret-9")
	esc, _ := json.Marshal(map[string]any{"cmd": "echo " + secret, "n": 1.50, "list": []any{"plain-secret-9", true, nil}, "plain-secret-9": "k"})
	for _, raw := range []string{
		string(esc),
		`{"a":"\u0070lain-secret-9","b":[1,2]}`, // a \u escape hides it
		`{"url":"x\/plain-secret-9"}`,
	} {
		got := r.JSON(json.RawMessage(raw))
		if !json.Valid(got) {
			t.Fatalf("JSON(%s) = %s: invalid", raw, got)
		}
		var v any
		_ = json.Unmarshal(got, &v)
		flat := fmt.Sprint(v)
		if strings.Contains(flat, "plain-secret-9") || strings.Contains(flat, secret) || !strings.Contains(flat, redact.Mask) {
			t.Errorf("JSON(%s) = %s", raw, got)
		}
	}
	// Key order and numbers are kept.
	if got := string(r.JSON(json.RawMessage(`{"z":1.50,"a":"plain-secret-9"}`))); got != `{"z":1.50,"a":"[redacted]"}` {
		t.Errorf("got %s", got)
	}
	// Clean JSON is returned as is, formatting included.
	clean := json.RawMessage("{ \"a\": \"b\\n\" }")
	if got := r.JSON(clean); &got[0] != &clean[0] {
		t.Errorf("clean JSON was copied: %s", got)
	}
	// Invalid JSON becomes a JSON string.
	if got := r.JSON(json.RawMessage(`{"a": "plain-secret-9`)); !json.Valid(got) || strings.Contains(string(got), "plain-secret-9") {
		t.Errorf("invalid JSON: %s", got)
	}
}

// benchSecrets are the kind of values a deployment has: tokens, a database
// URL and password, project secrets.
var benchSecrets = []string{
	"xoxb-123-456-secret", "xapp-1-A0123-987654321-abcdef", "hunter22", "another-secret-value", "project-secret-1",
	"postgres://threadline:pa55word@db.internal:5432/threadline", "pa55word", "sk-ant-api03-abcdefghijklmnop",
}

func benchText() string {
	return strings.Repeat("Here is some ordinary agent output with code and words. ", 200)
}

func BenchmarkStringManySecrets(b *testing.B) {
	r := redact.New(benchSecrets...)
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		r.String(text)
	}
}

// BenchmarkStream streams the text in deltas of about 40 bytes, as an agent does.
func BenchmarkStream(b *testing.B) {
	r := redact.New(benchSecrets...)
	text := benchText()
	var pieces []string
	for rest := text; rest != ""; {
		k := min(len(rest), 37)
		pieces = append(pieces, rest[:k])
		rest = rest[k:]
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		st := r.Stream()
		for _, p := range pieces {
			st.Write(p)
		}
		st.Flush()
	}
}

// FuzzStream: however a text is cut, the stream releases exactly what String
// makes of the whole, and no released prefix holds a secret.
func FuzzStream(f *testing.F) {
	secrets := []string{"aab-aab", "aab-aac", "ab-aab-aab", "b-aab-", "pässwörd", `q"uote\d`}
	r := redact.New(secrets...)
	f.Add("xx aab-aab yy ab-aab-aab", []byte{3, 1, 7})
	f.Add("pässwörd and b-aab-aab", []byte{2, 9})
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		var pieces []string
		rest := text
		for _, c := range cuts {
			if rest == "" {
				break
			}
			k := min(len(rest), int(c%16))
			pieces = append(pieces, rest[:k])
			rest = rest[k:]
		}
		pieces = append(pieces, rest)
		st := r.Stream()
		sofar := ""
		for _, p := range pieces {
			sofar += st.Write(p)
			for _, s := range secrets {
				if strings.Contains(sofar, s) {
					t.Fatalf("pieces %q: released %q holds %q", pieces, sofar, s)
				}
			}
		}
		sofar += st.Flush()
		if want := r.String(text); sofar != want {
			t.Fatalf("pieces %q: stream %q, String %q", pieces, sofar, want)
		}
	})
}

// FuzzJSON: valid JSON stays valid, and none of its strings keeps a secret.
func FuzzJSON(f *testing.F) {
	secrets := []string{"plain-secret-9", `tok"en\with<html>&`, "ünï-cødé-1"}
	r := redact.New(secrets...)
	f.Add(`{"a":"plain-secret-9","b":[1,"x\u0070lain-secret-9"]}`)
	f.Add(`["tok\"en\\with\u003chtml\u003e\u0026", {"ünï-cødé-1": null}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		if !json.Valid([]byte(raw)) {
			return
		}
		out := r.JSON(json.RawMessage(raw))
		if !json.Valid(out) {
			t.Fatalf("JSON(%s) = %s: invalid", raw, out)
		}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case string:
				for _, s := range secrets {
					if strings.Contains(v, s) {
						t.Fatalf("JSON(%s) = %s keeps %q", raw, out, s)
					}
				}
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				for k, e := range v {
					walk(k)
					walk(e)
				}
			}
		}
		var v any
		_ = json.Unmarshal(out, &v)
		walk(v)
	})
}
