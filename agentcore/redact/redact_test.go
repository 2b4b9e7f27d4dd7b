package redact_test

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops/redact"
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
