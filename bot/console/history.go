// Recap: the end of a reopened chat, so the user sees where it left off.

package console

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/chatops"
)

// A recap reads the last recapEvents events, four times as many while that
// holds no message of the user's (a long answer), up to recapMaxEvents.
const (
	recapEvents    = 400
	recapMaxEvents = 25600
)

// Recap prints the last turns of a chat (the user's messages and the
// assistant's answers, each cut to a few lines) before the prompt. The turns
// are chatlog's visible transcript; a recap that does not reach back to the
// chat's first event, or that keeps only the last turns, starts at a message
// of the user's, never in the middle of an answer.
func Recap(ctx context.Context, bot *chatops.Chats, chatID agent.ChatID, w io.Writer, turns int) error {
	last, err := bot.LastSeq(ctx, chatID)
	if err != nil || last == 0 {
		return err
	}
	var all []chatlog.Turn
	for window := int64(recapEvents); ; window *= 4 {
		from := max(0, last-window)
		if all, err = recapTurns(ctx, bot, chatID, from, last); err != nil {
			return err
		}
		if from == 0 || window >= recapMaxEvents || slices.ContainsFunc(all, func(t chatlog.Turn) bool { return t.Role == chatlog.RoleUser }) {
			break
		}
	}
	if len(all) > turns {
		all = all[len(all)-turns:]
	}
	// Start at a message of the user's: not with the end of an answer whose
	// start was cut off (by the window read or by the count of turns).
	for len(all) > 0 && all[0].Role != chatlog.RoleUser {
		all = all[1:]
	}
	if len(all) == 0 {
		return nil
	}
	fmt.Fprintln(w, "… earlier in this chat:")
	for _, t := range all {
		who := "you"
		if t.Role == chatlog.RoleAssistant {
			who = "agent"
		}
		fmt.Fprintf(w, "  %s: %s\n", who, clip(t.Text, 4, 400))
	}
	return nil
}

// recapTurns folds the chat's events after from up to last into turns.
func recapTurns(ctx context.Context, bot *chatops.Chats, chatID agent.ChatID, from, last int64) ([]chatlog.Turn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var fold chatlog.Fold
	for ev := range bot.Subscribe(ctx, chatID, from) {
		fold.Add(ev.Type, ev.Payload)
		if ev.Seq >= last {
			return fold.Turns(), nil
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return fold.Turns(), nil
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
