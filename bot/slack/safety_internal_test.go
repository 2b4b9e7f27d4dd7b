// Tests of panicked, the safety net's log line and note.

package slack

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestPanickedWhomPanics: when finding whom to tell panics too, both panics
// are logged with a stack and the bot goes on.
func TestPanickedWhomPanics(t *testing.T) {
	var logs bytes.Buffer
	b := &Bot{log: slog.New(slog.NewJSONHandler(&logs, nil))}
	b.panicked(context.Background(), "test", "first", func() who { panic("second") })
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d log lines, want 2: %s", len(lines), logs.String())
	}
	for i, want := range []string{`"panic":"first"`, `"panic":"second"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"stack":"goroutine `) {
			t.Errorf("line %d = %s, want %s with a stack", i, lines[i], want)
		}
	}
	if b.Panics() != 1 {
		t.Errorf("Panics = %d, want 1", b.Panics())
	}
}
