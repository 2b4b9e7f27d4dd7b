// Chats: the recent chats, to reopen one with `threadline chat --chat ID`.

package console

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/store"
)

// ChatHistory reads chats and their events (*store.Store).
type ChatHistory interface {
	ListChats(ctx context.Context, limit int) ([]store.Chat, error)
	EventsAfter(ctx context.Context, chatID agent.ChatID, afterSeq int64, limit int) ([]store.Event, error)
	EventsBefore(ctx context.Context, chatID agent.ChatID, beforeSeq int64, limit int) ([]store.Event, error)
}

// ChatSummary is one chat in the list of recent chats (a line of
// `threadline chats --json`).
type ChatSummary struct {
	ID agent.ChatID `json:"id"`
	// Title is the chat's title, else its first message.
	Title   string `json:"title"`
	Agent   string `json:"agent"`
	Model   string `json:"model,omitempty"`
	Project string `json:"project,omitempty"`
	Cwd     string `json:"cwd"`
	// By is who wrote the first message ("console:alice", "slack:U0123").
	By string `json:"by,omitempty"`
	// LastActivity is the time of the chat's last event, else of its last
	// change of settings.
	LastActivity time.Time `json:"last_activity"`
	// Events counts the chat's events (0: nothing was ever sent).
	Events int64 `json:"events"`
}

// scanChats bounds how many chats RecentChats reads to sort by activity.
const scanChats = 200

// RecentChats returns up to n chats, the most recently active first.
func RecentChats(ctx context.Context, h ChatHistory, n int) ([]ChatSummary, error) {
	chats, err := h.ListChats(ctx, max(n, scanChats))
	if err != nil {
		return nil, err
	}
	out := make([]ChatSummary, 0, len(chats))
	for _, c := range chats {
		id := agent.ChatID(c.ID) // a stored row
		s := ChatSummary{ID: id, Agent: c.Agent, Model: c.Model, Project: c.Project, Cwd: c.Cwd, Title: c.Title, LastActivity: c.UpdatedAt}
		last, err := h.EventsBefore(ctx, id, 0, 1)
		if err != nil {
			return nil, err
		}
		if len(last) > 0 {
			s.Events = last[0].Seq
			if last[0].At.After(s.LastActivity) {
				s.LastActivity = last[0].At
			}
		}
		if s.Events > 0 {
			first, err := h.EventsAfter(ctx, id, 0, 20)
			if err != nil {
				return nil, err
			}
			for _, ev := range first {
				if en, err := chatlog.Decode(ev.Type, ev.Payload); err == nil && en.User != nil {
					s.By = en.User.By
					if s.Title == "" {
						s.Title = en.User.Text
					}
					break
				}
			}
		}
		out = append(out, s)
	}
	slices.SortStableFunc(out, func(a, b ChatSummary) int { return b.LastActivity.Compare(a.LastActivity) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

// WriteChats prints the chats as a table: id, last activity (relative to
// now), agent and model, project, who started it, and the title.
func WriteChats(w io.Writer, chats []ChatSummary, now time.Time) error {
	if len(chats) == 0 {
		_, err := fmt.Fprintln(w, "No chats yet: `threadline chat` starts one.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tACTIVE\tAGENT\tPROJECT\tBY\tTITLE")
	for _, c := range chats {
		agent := c.Agent
		if c.Model != "" {
			agent += " · " + c.Model
		}
		title := oneLine(cmp.Or(c.Title, "(no message yet)"), 60)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.ID, ago(now, c.LastActivity), agent, cmp.Or(c.Project, "-"), cmp.Or(c.By, "-"), tabless(title))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "Reopen one with: threadline chat --chat ID")
	return err
}

// WriteChatsJSON prints the chats as JSON, one object per line.
func WriteChatsJSON(w io.Writer, chats []ChatSummary) error {
	enc := json.NewEncoder(w)
	for _, c := range chats {
		if err := enc.Encode(c); err != nil {
			return err
		}
	}
	return nil
}

// ago says how long before now t was: "just now", "5m ago", "3h ago",
// "2d ago", else the date.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	switch {
	case t.IsZero():
		return "-"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d.Hours()))
	case d < 30*24*time.Hour:
		return fmt.Sprintf("%dd ago", int(d.Hours()/24))
	}
	return t.Local().Format("2006-01-02")
}

func tabless(s string) string { return strings.ReplaceAll(s, "\t", " ") }
