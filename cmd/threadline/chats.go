// threadline chats: the recent chats to reopen (bot/console lists them).

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

func cmdChats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("chats", stdout, stderr, "threadline chats [-n N] [--json] [--config F]: the recent chats, most recently active first; reopen one with threadline chat --chat ID")
	config := fs.String("config", "", "config file")
	n := fs.Int("n", 20, "how many chats")
	asJSON := fs.Bool("json", false, "one JSON object per line")
	if _, err := parseExactly(fs, args); err != nil {
		return err
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
	chats, err := console.RecentChats(ctx, st, max(*n, 1))
	if err != nil {
		return err
	}
	if !*asJSON {
		return console.WriteChats(stdout, chats, time.Now())
	}
	enc := json.NewEncoder(stdout)
	for _, c := range chats {
		if err := enc.Encode(chatJSON{c.ID, c.Title, c.Agent, c.Model, c.Project, c.Cwd, c.By, c.LastActivity, c.Events}); err != nil {
			return err
		}
	}
	return nil
}

// chatJSON is a line of threadline chats --json.
type chatJSON struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Agent        string    `json:"agent"`
	Model        string    `json:"model,omitempty"`
	Project      string    `json:"project,omitempty"`
	Cwd          string    `json:"cwd"`
	By           string    `json:"by,omitempty"`
	LastActivity time.Time `json:"last_activity"`
	Events       int64     `json:"events"`
}
