// threadline chats: the recent chats to reopen (bot/console lists them).

package main

import (
	"context"
	"io"
	"time"

	"github.com/threadline-bot/threadline/bot/console"
)

func cmdChats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chats", stdout, stderr, "threadline chats [-n N] [--json] [--config F]: the recent chats, most recently active first; reopen one with threadline chat --chat ID")
	config := fs.String("config", "", "config file")
	n := fs.Int("n", 20, "how many chats")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	_, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	chats, err := console.RecentChats(ctx, st, max(*n, 1))
	if err != nil {
		return err
	}
	if *asJSON {
		return console.WriteChatsJSON(stdout, chats)
	}
	return console.WriteChats(stdout, chats, time.Now())
}
