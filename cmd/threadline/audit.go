// threadline audit: the flags; store/auditlog reads --since and prints.

package main

import (
	"context"
	"io"
	"time"

	"github.com/threadline-bot/threadline/store/auditlog"
)

func cmdAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("audit", stdout, stderr, "threadline audit [--chat ID] [--since T] [--json] [--config F]: who started which run and answered which request")
	config := fs.String("config", "", "config file")
	chat := fs.String("chat", "", "only this chat: its id or a unique prefix (at least 4 characters)")
	since := fs.String("since", "", "only actions since T: RFC 3339 (2026-11-30T08:00:00Z), a date (2026-11-30) or a duration ago (24h)")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	from, err := auditlog.ParseSince(*since, time.Now())
	if err != nil {
		return &exitError{2, err}
	}
	_, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := resolveChat(ctx, st, *chat)
	if err != nil {
		return err
	}
	entries, err := st.Audit(ctx, id, from)
	if err != nil {
		return err
	}
	return auditlog.Write(stdout, entries, *asJSON)
}
