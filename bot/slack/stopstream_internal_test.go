package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
)

// TestStopStreamSendsTheRest: the stop carries every byte of the rest that was
// not appended (a rest longer than one call's limit goes out in appends first,
// its last piece with the stop), and the view's status and footer as blocks.
func TestStopStreamSendsTheRest(t *testing.T) {
	fake := slacktest.New(t)
	s := &surface{api: slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.APIURL())), stream: true, requester: map[chatops.Place]string{}}
	ctx := context.Background()
	for _, rest := range []string{
		"",
		"the last words.",
		strings.Repeat("é long rest ", 2500), // 30,000 runes: three calls
	} {
		p := chatops.Place{Platform: Platform, Workspace: slacktest.TeamID, Channel: "D1", Thread: fake.PostUserMessage("D1", "", "hi")}
		id, err := s.StartStream(ctx, p, chatops.View{Body: "Start. "})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendStream(ctx, p, id, "Middle. "); err != nil {
			t.Fatal(err)
		}
		if err := s.StopStream(ctx, p, id, rest, chatops.View{Body: "Start. Middle. " + rest, Footer: "Done in 1s"}); err != nil {
			t.Fatal(err)
		}
		m, ok := fake.Message("D1", id)
		if !ok {
			t.Fatal("no streamed message")
		}
		if want := "Start. Middle. " + rest; m.Markdown != want {
			t.Errorf("rest of %d runes: streamed %d runes, want %d", len([]rune(rest)), len([]rune(m.Markdown)), len([]rune(want)))
		}
		if m.Streaming || !strings.Contains(string(m.Blocks), "Done in 1s") {
			t.Errorf("stop: streaming %v, blocks %s", m.Streaming, m.Blocks)
		}
	}
}
