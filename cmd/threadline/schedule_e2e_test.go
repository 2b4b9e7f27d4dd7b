package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
)

// TestScheduleEndToEnd: `threadline serve` with the Slack fake and a
// scripted agent (the test binary as a streaming Claude). `schedule run`
// makes the running serve post a new thread in the schedule's channel, with
// the agent's answer; a reply in that thread goes on in the same chat.
func TestScheduleEndToEnd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := isolate(t)
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": "127.0.0.1:0"}, map[string]any{
		"workdir": filepath.Join(dir, "work"),
		"agents":  map[string]any{"claude": map[string]any{"bin": exe, "env": map[string]string{testRoleEnv: "fakeclaude"}}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}}},
	})
	for _, args := range [][]string{
		{"schedule", "add", "nightly", "--cron", "0 3 * * *", "--channel", "C1", "--workspace", slacktest.TeamID, "Summarise the day"},
	} {
		if code, _, errOut, err := run(t, "", append(args, "--config", cfgPath)...); code != 0 || err != nil {
			t.Fatalf("%v: %d %v\n%s", args, code, err, errOut)
		}
	}
	old := scheduleInterval
	scheduleInterval = 100 * time.Millisecond
	t.Cleanup(func() { scheduleInterval = old })
	s := startServe(t, fake, cfgPath)
	defer s.stop()

	if code, out, errOut, err := run(t, "", "schedule", "run", "nightly", "--config", cfgPath); code != 0 || err != nil {
		t.Fatalf("schedule run: %d %v\n%s", code, err, errOut)
	} else if !strings.Contains(out, "Schedule nightly runs now") {
		t.Errorf("schedule run said %q", out)
	}
	var root string
	chatopstest.WaitFor(t, "the schedule's new thread", func() bool {
		for _, m := range fake.Messages() {
			if m.Channel == "C1" && m.ThreadTS == "" && strings.Contains(m.Text+m.Markdown+string(m.Blocks), "Schedule nightly (run by cli") &&
				strings.Contains(m.Text+m.Markdown+string(m.Blocks), "Summarise the day") {
				root = m.TS
				return true
			}
		}
		return false
	})
	answer := s.answer(root, 1)
	if text := answer.Text + answer.Markdown + string(answer.Blocks); !strings.Contains(text, "chunk 120") {
		t.Errorf("the answer lacks the agent's last words:\n%s", text)
	}

	// A reply in the scheduled thread goes to the same chat.
	ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> and tomorrow?"})
	s.mention("EvSched2", ts, root, "and tomorrow?")
	s.answer(root, 2)

	st, err := store.Open(context.Background(), filepath.Join(dir, "tl.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chats, err := st.ListChats(context.Background(), 10)
	if err != nil || len(chats) != 1 {
		t.Fatalf("chats %+v, %v; want the schedule's one", chats, err)
	}
	fs, err := st.ScheduleFirings(context.Background(), "nightly", 10)
	if err != nil || len(fs) != 1 || fs[0].State != store.FiringStarted || fs[0].ChatID != chats[0].ID || fs[0].Kind != store.FiringManual {
		t.Errorf("firings %+v, %v", fs, err)
	}
}
