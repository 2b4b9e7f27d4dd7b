package slack

import (
	"context"
	"strings"
	"testing"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
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
		id, err := s.StartStream(ctx, p, []outbox.Chunk{{Markdown: "Start. "}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.AppendStream(ctx, p, id, []outbox.Chunk{{Markdown: "Middle. "}}); err != nil {
			t.Fatal(err)
		}
		var last []outbox.Chunk
		if rest != "" {
			last = []outbox.Chunk{{Markdown: rest}}
		}
		if err := s.StopStream(ctx, p, id, last, chatops.View{Body: "Start. Middle. " + rest, Footer: "Done in 1s"}); err != nil {
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

// TestStreamChunks: task cards and the plan go out as Slack's chunks, between
// the paragraphs where the calls began, updated in place by id, within
// Slack's limits (plain-text titles and outputs of at most 256 characters,
// "complete" not "completed"); the fake refuses malformed chunks as Slack
// does.
func TestStreamChunks(t *testing.T) {
	fake := slacktest.New(t)
	s := &surface{api: slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.APIURL())), stream: true, requester: map[chatops.Place]string{}}
	ctx := context.Background()
	p := chatops.Place{Platform: Platform, Workspace: slacktest.TeamID, Channel: "D1", Thread: fake.PostUserMessage("D1", "", "hi")}
	long := strings.Repeat("x", 1000)
	task := render.Step{ID: "toolu_1", Title: "Bash: " + long, Status: render.StatusRunning}
	id, err := s.StartStream(ctx, p, []outbox.Chunk{{Markdown: "I'll create the file now."}, {Task: &task}})
	if err != nil {
		t.Fatal(err)
	}
	done := task
	done.Status, done.Output = render.StatusDone, long
	plan := render.Plan{Title: "Plan", Items: []render.PlanItem{{Text: "Write", Status: render.StatusDone}, {Text: "Test", Status: render.StatusRunning}}}
	if err := s.AppendStream(ctx, p, id, []outbox.Chunk{{Task: &done}, {Markdown: "\n\nTool finished."}, {Plan: &plan}}); err != nil {
		t.Fatal(err)
	}
	if err := s.StopStream(ctx, p, id, nil, chatops.View{Footer: "Done in 1s"}); err != nil {
		t.Fatal(err)
	}
	m, _ := fake.Message("D1", id)
	if m.Markdown != "I'll create the file now.\n\nTool finished." || m.DisplayMode != "timeline" || m.PlanTitle != "Plan" {
		t.Fatalf("streamed %q mode %q plan %q", m.Markdown, m.DisplayMode, m.PlanTitle)
	}
	if len(m.Tasks) != 3 {
		t.Fatalf("tasks %+v", m.Tasks)
	}
	tc := m.Tasks[0]
	if tc.ID != "toolu_1" || tc.Status != "complete" || tc.Updates != 2 || tc.After != len("I'll create the file now.") || len([]rune(tc.Title)) > 256 || len([]rune(tc.Output)) > 256 {
		t.Errorf("task card %+v", tc)
	}
	if m.Tasks[1].ID != "plan-0" || m.Tasks[1].Status != "complete" || m.Tasks[2].Title != "Test" || m.Tasks[2].Status != "in_progress" {
		t.Errorf("plan tasks %+v", m.Tasks[1:])
	}
	// Slack refuses a malformed chunk; the fake too.
	api := slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.APIURL()))
	_, id2, err := api.StartStreamContext(ctx, "D1", slack.MsgOptionTS(p.Thread))
	if err != nil {
		t.Fatal(err)
	}
	bad := slack.NewTaskUpdateChunk("t", "x")
	bad.Status = "completed"
	if _, _, err := api.AppendStreamContext(ctx, "D1", id2, slack.MsgOptionChunks(bad)); err == nil || !strings.Contains(err.Error(), "invalid_chunks") {
		t.Errorf("a task with status completed: %v", err)
	}
}
