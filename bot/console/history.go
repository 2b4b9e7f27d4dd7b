// Recap: the end of a reopened chat, so the user sees where it left off.

package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
)

// recapEvents bounds how far back a recap reads.
const recapEvents = 400

// Recap prints the last turns of a chat (the user's messages and the
// assistant's answers, each cut to a few lines) before the prompt.
func Recap(ctx context.Context, bot *chatops.Bot, chatID string, w io.Writer, turns int) error {
	last, err := bot.LastSeq(ctx, chatID)
	if err != nil || last == 0 {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type turn struct{ who, text string }
	var all []turn
	for ev := range bot.Subscribe(ctx, chatID, max(0, last-recapEvents)) {
		var e agent.Event
		_ = json.Unmarshal(ev.Payload, &e)
		switch {
		case ev.Type == "user.message":
			var m struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(ev.Payload, &m)
			all = append(all, turn{"you", m.Text})
		case e.Type == agent.EventToolStarted:
			// Text before and after a tool call are separate paragraphs.
			if n := len(all); n > 0 && all[n-1].who == "agent" && !strings.HasSuffix(all[n-1].text, "\n") {
				all[n-1].text += "\n"
			}
		case e.Type == agent.EventAssistantDelta:
			if n := len(all); n > 0 && all[n-1].who == "agent" {
				all[n-1].text += e.Text
			} else {
				all = append(all, turn{"agent", e.Text})
			}
		}
		if ev.Seq >= last {
			break
		}
	}
	if len(all) > turns {
		all = all[len(all)-turns:]
	}
	if len(all) == 0 {
		return nil
	}
	fmt.Fprintln(w, "… earlier in this chat:")
	for _, t := range all {
		fmt.Fprintf(w, "  %s: %s\n", t.who, clip(t.text, 4, 400))
	}
	return nil
}

// clip keeps the first lines and bytes of s, marking what it cut.
func clip(s string, lines, size int) string {
	s = strings.TrimSpace(s)
	cut := false
	if ls := strings.Split(s, "\n"); len(ls) > lines {
		s, cut = strings.Join(ls[:lines], "\n"), true
	}
	if len(s) > size {
		s, cut = s[:size], true
	}
	s = strings.ReplaceAll(s, "\n", "\n    ")
	if cut {
		s += " …"
	}
	return s
}
