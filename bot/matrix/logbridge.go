// logbridge.go: mautrix logs with zerolog; this forwards its records to the
// injected slog logger, so the bot has one log.

package matrix

import (
	"context"
	"encoding/json"
	"log/slog"
	"sort"

	"github.com/rs/zerolog"
)

// slogWriter receives zerolog's JSON records, one per Write.
type slogWriter struct{ log *slog.Logger }

func (w slogWriter) Write(p []byte) (int, error) {
	var rec map[string]any
	if err := json.Unmarshal(p, &rec); err != nil {
		w.log.Warn("mautrix log line", "line", string(p))
		return len(p), nil
	}
	level := slog.LevelInfo
	switch rec[zerolog.LevelFieldName] {
	case "trace", "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error", "fatal", "panic":
		level = slog.LevelError
	}
	msg, _ := rec[zerolog.MessageFieldName].(string)
	if msg == "" {
		msg = "mautrix"
	}
	delete(rec, zerolog.LevelFieldName)
	delete(rec, zerolog.MessageFieldName)
	delete(rec, zerolog.TimestampFieldName)
	keys := make([]string, 0, len(rec))
	for k := range rec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	attrs := make([]slog.Attr, 0, len(keys))
	for _, k := range keys {
		// Never forward request bodies or tokens mautrix may put in a record.
		if k == "req_body" || k == "access_token" || k == "password" {
			continue
		}
		attrs = append(attrs, slog.Any(k, rec[k]))
	}
	w.log.LogAttrs(context.Background(), level, msg, attrs...)
	return len(p), nil
}

// zerologFor returns a zerolog logger writing to log at the levels log has
// enabled (debug records only when debug is on).
func zerologFor(log *slog.Logger) zerolog.Logger {
	lvl := zerolog.InfoLevel
	if log.Enabled(context.Background(), slog.LevelDebug) {
		lvl = zerolog.DebugLevel
	}
	return zerolog.New(slogWriter{log: log.With("component", "mautrix")}).Level(lvl)
}
