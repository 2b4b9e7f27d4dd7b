// threadline audit: who started which run and who answered which interaction.

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("audit", stdout, stderr, "threadline audit [--chat ID] [--since T] [--json] [--config F]: who started which run and answered which request")
	config := fs.String("config", "", "config file")
	chat := fs.String("chat", "", "only this chat")
	since := fs.String("since", "", "only actions since T: RFC 3339 (2026-11-30T08:00:00Z), a date (2026-11-30) or a duration ago (24h)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	from, err := parseSince(*since, time.Now())
	if err != nil {
		return &exitError{2, err}
	}
	cfg, err := configs.Load(*config)
	if err != nil {
		return err
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, newLogger(stderr, slog.LevelWarn, cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	entries, err := st.Audit(ctx, *chat, from)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, e := range entries {
			if err := enc.Encode(map[string]any{"at": e.At, "chat_id": e.ChatID, "run_id": e.RunID, "action": e.Action, "by": e.By, "detail": e.Detail}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(entries) == 0 {
		fmt.Fprintln(stdout, "No audited actions.")
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCHAT\tRUN\tACTION\tBY\tDETAIL")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.At.Local().Format(time.DateTime), short(e.ChatID), short(e.RunID), e.Action, e.By, e.Detail)
	}
	return tw.Flush()
}

// parseSince reads --since: RFC 3339, a date, or a duration before now.
func parseSince(s string, now time.Time) (time.Time, error) {
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
