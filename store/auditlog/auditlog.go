// Package auditlog presents the store's audit trail (who started which run
// and who answered which interaction) for `threadline audit`: the --since
// syntax and the table or JSON lines output.
package auditlog

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/threadline-bot/threadline/store"
)

// Write prints entries to w: a table, or one JSON object per line (at,
// chat_id, run_id, action, by, detail).
func Write(w io.Writer, entries []store.AuditEntry, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		for _, e := range entries {
			if err := enc.Encode(map[string]any{"at": e.At, "chat_id": e.ChatID, "run_id": e.RunID, "action": e.Action, "by": e.By, "detail": e.Detail}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(entries) == 0 {
		fmt.Fprintln(w, "No audited actions.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCHAT\tRUN\tACTION\tBY\tDETAIL")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime), short(e.ChatID), short(e.RunID), e.Action, e.By, e.Detail)
	}
	return tw.Flush()
}

// ParseSince reads --since: RFC 3339, a date, or a duration before now.
func ParseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, time.DateTime, time.DateOnly} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: use RFC 3339 (2026-11-30T08:00:00Z), a date (2026-11-30) or a duration (24h)", s)
}

// short abbreviates a uuid for a table.
func short(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
