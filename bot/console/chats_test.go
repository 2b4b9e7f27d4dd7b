package console_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestRecentChats: chats come most recently active first (their last
// event, not their creation), titled by their first message, with who
// wrote it; a chat with no message yet is listed too; n bounds the list.
func TestRecentChats(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			s := chatopstest.NewStack(t, storetest.Open(t, d), nil)
			ctx := t.Context()
			newChat := func(project string) agent.ChatID {
				c, err := s.Bot.NewChat(ctx, chatops.Chat{Agent: "fake", Project: project, Cwd: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				return c.ID
			}
			say := func(chat agent.ChatID, text string) {
				s.Prov.Add(chatopstest.Answer("ok"))
				run, err := s.Bot.Send(ctx, chatops.Prompt{ChatID: chat, Text: text, By: "console:alice"})
				if err != nil {
					t.Fatal(err)
				}
				<-run.Done()
			}
			a := newChat("")
			b := newChat("web")
			empty := newChat("")
			say(a, "first question of a\nwith a second line")
			say(b, "fix the build")
			say(a, "a again") // a is now the most recent
			got, err := console.RecentChats(ctx, s.St, 10)
			if err != nil {
				t.Fatal(err)
			}
			var ids []agent.ChatID
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if len(got) != 3 || got[0].ID != a || got[1].ID != b || got[2].ID != empty {
				t.Fatalf("order %v, want %v", ids, []agent.ChatID{a, b, empty})
			}
			if got[0].Title != "first question of a\nwith a second line" || got[0].By != "console:alice" || got[0].Agent != "fake" || got[0].Events == 0 {
				t.Errorf("a: %+v", got[0])
			}
			if got[1].Project != "web" || got[1].Title != "fix the build" {
				t.Errorf("b: %+v", got[1])
			}
			if got[2].Title != "" || got[2].Events != 0 {
				t.Errorf("empty: %+v", got[2])
			}
			if two, err := console.RecentChats(ctx, s.St, 2); err != nil || len(two) != 2 || two[0].ID != a {
				t.Errorf("n=2: %v %v", two, err)
			}
		})
	}
}

// TestWriteChats: a table with a header, one row per chat (the title on one
// line, the time relative), and how to reopen one; an empty list says how
// to start.
func TestWriteChats(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	var b bytes.Buffer
	err := console.WriteChats(&b, []console.ChatSummary{
		{ID: "c-1", Agent: "claude", Model: "opus", Title: "fix\tthe build\nplease", By: "console:alice", LastActivity: now.Add(-5 * time.Minute)},
		{ID: "c-2", Agent: "codex", Project: "web", LastActivity: now.Add(-50 * time.Hour)},
	}, now)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("lines:\n%s", b.String())
	}
	for i, want := range [][]string{
		{"ID", "ACTIVE", "AGENT", "PROJECT", "BY", "TITLE"},
		{"c-1", "5m ago", "claude · opus", "-", "console:alice", "fix the build …"},
		{"c-2", "2d ago", "codex", "web", "-", "(no message yet)"},
		{"Reopen one with: threadline chat --chat ID"},
	} {
		for _, w := range want {
			if !strings.Contains(lines[i], w) {
				t.Errorf("line %d %q lacks %q", i, lines[i], w)
			}
		}
	}
	b.Reset()
	if err := console.WriteChats(&b, nil, now); err != nil || !strings.Contains(b.String(), "threadline chat") {
		t.Errorf("empty: %q %v", b.String(), err)
	}
}

// TestRecapStartsAtAMessage: a recap cut to its last turns never starts
// with the end of an answer.
func TestRecapStartsAtAMessage(t *testing.T) {
	s, chat := stack(t)
	for i, text := range []string{"one", "two", "three"} {
		s.Prov.Add(chatopstest.Answer("answer " + text))
		run, err := s.Bot.Send(t.Context(), chatops.Prompt{ChatID: chat, Text: text, By: "console:t"})
		if err != nil {
			t.Fatal(i, err)
		}
		<-run.Done()
	}
	var b bytes.Buffer
	if err := console.Recap(t.Context(), s.Bot, chat, &b, 3); err != nil {
		t.Fatal(err)
	}
	want := "… earlier in this chat:\n  you: three\n  agent: answer three\n"
	if b.String() != want {
		t.Errorf("recap:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestRecapLongAnswer: a last answer longer than the first window read
// (hundreds of streamed deltas) is still recapped from the message that
// asked for it.
func TestRecapLongAnswer(t *testing.T) {
	s, chat := stack(t)
	chunks := make([]string, 900)
	for i := range chunks {
		chunks[i] = "w "
	}
	s.Prov.Add(chatopstest.Answer(chunks...))
	run, err := s.Bot.Send(t.Context(), chatops.Prompt{ChatID: chat, Text: "write a lot", By: "console:t"})
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	if last, err := s.St.LastSeq(t.Context(), chat); err != nil || last < 900 {
		t.Fatalf("only %d events (%v): the test needs more than a window", last, err)
	}
	var b bytes.Buffer
	if err := console.Recap(t.Context(), s.Bot, chat, &b, 6); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "… earlier in this chat:\n  you: write a lot\n  agent: w w w") {
		t.Errorf("recap:\n%s", b.String())
	}
}
