package configs

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
)

// TestReloader: a valid file is applied with its changed keys; an invalid
// one, or one Apply refuses, changes nothing; the new secrets reach the
// running redactor and never the log.
func TestReloader(t *testing.T) {
	isolate(t)
	path := writeConfig(t, "access: {admins: [\"slack:U1\"]}\n")
	start, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	red := start.Redactor()
	var applied []*Config
	refuse := error(nil)
	l := &Reloader{Start: start, Redactor: red, Log: slog.New(redact.Handler(slog.NewTextHandler(&logs, nil), red)),
		Apply: func(next *Config, r Reload) error {
			if refuse != nil {
				return refuse
			}
			applied = append(applied, r.Effective)
			return nil
		}}
	write := func(body string) {
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("access: {admins: [\"slack:U2\"]}\nhttp: {listen: 127.0.0.1:9999}\nagents: {claude: {env: {K: sk-reloaded-secret-1}}}\n")
	r, err := l.Reload(t.Context(), "")
	if err != nil || !slices.Contains(r.Applied, "access.admins") || !slices.Contains(r.Restart, "http.listen") || len(applied) != 1 {
		t.Fatalf("reload = %+v, %v", r, err)
	}
	if red.String("x sk-reloaded-secret-1 y") != "x [redacted] y" {
		t.Error("the new file's secret did not reach the running redactor")
	}
	write("access: {admins: [\"nobody\"]}\n")
	if _, err := l.Reload(t.Context(), ""); err == nil || len(applied) != 1 {
		t.Fatalf("an invalid file: %v, %d applied", err, len(applied))
	}
	refuse = errors.New("agents: no")
	write("access: {admins: [\"slack:U3\"]}\n")
	if _, err := l.Reload(t.Context(), ""); !errors.Is(err, refuse) || len(applied) != 1 {
		t.Fatalf("refused by Apply: %v", err)
	}
	refuse = nil
	// Against the last applied config: only what changed since.
	write("access: {admins: [\"slack:U2\"]}\nagents: {claude: {env: {K: sk-reloaded-secret-1}}}\n")
	if r, err := l.Reload(t.Context(), ""); err != nil || len(r.Applied) != 0 {
		t.Errorf("an unchanged reload applied %v, %v", r.Applied, err)
	}
	for _, want := range []string{"config reloaded", "config reload refused", "needs_restart"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q", want)
		}
	}
	if strings.Contains(logs.String(), "sk-reloaded-secret-1") {
		t.Error("a secret reached the log")
	}
}
