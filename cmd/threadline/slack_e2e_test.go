package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// TestSlackEndToEnd drives the Slack front-end with the REAL Claude Code CLI
// behind it (talking to the scripted Anthropic API fake, inside a
// loopback-only network namespace) and the fake Slack in front: a mention
// streams edits into the thread, a thread reply asks for approval, the
// Approve button's answer reaches the CLI, the tool runs, and the final
// message shows the result.
func TestSlackEndToEnd(t *testing.T) {
	bin, dir, ok := realClaudeDir(t)
	if !ok {
		return
	}
	work := filepath.Join(dir, "work")
	api := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "touch approved.txt && echo approved-run", "description": "Create approved.txt"})),
		fakeapi.When("SLOW", fakeapi.Slow(60, 60*time.Millisecond)),
		fakeapi.Text("Hello", " from", " the fake", " API."),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// The bot as a user runs it: `threadline serve` with a config file.
	fake := slacktest.New(t)
	cfgPath := slackServeConfig(t, dir, bin, api, fake, "ULEAD")
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	send := func(id string, payload map[string]any) {
		t.Helper()
		env, err := fake.Envelope("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID,
			"api_app_id": slacktest.AppID, "event_id": id, "event_time": time.Now().Unix(), "event": payload}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	mention := func(id, ts, thread, text string) {
		ev := map[string]any{"type": "app_mention", "user": "UDEV", "channel": "C1", "ts": ts, "event_ts": ts,
			"text": "<@" + slacktest.BotUserID + "> " + text}
		if thread != "" {
			ev["thread_ts"] = thread
		}
		send(id, ev)
	}
	final := func(what string, root string, n int) slacktest.Message {
		t.Helper()
		var out slacktest.Message
		chatopstest.WaitFor(t, what, func() bool {
			seen := 0
			for _, m := range fake.Thread("C1", root) {
				if strings.Contains(string(m.Blocks), "Done in") {
					seen++
					out = m
				}
			}
			return seen >= n
		})
		return out
	}

	// 1. A mention: the answer streams into the thread as edits of one message.
	root := fake.PostUserMessage("C1", "", "say hello")
	mention("Ev1", root, "", "say hello")
	m := final("the first answer", root, 1)
	if !strings.Contains(string(m.Blocks)+m.Markdown, "Hello from the fake API.") {
		t.Fatalf("first answer: blocks %s, streamed %q", m.Blocks, m.Markdown)
	}

	// 2. A slow answer in the same thread shows several edits while it streams.
	slow := fake.PostUserMessage("C1", root, "SLOW please")
	mention("Ev2", slow, root, "SLOW please")
	m = final("the slow answer", root, 2)
	if !strings.Contains(string(m.Blocks)+m.Markdown, "word59") || len(m.Versions) < 3 {
		t.Fatalf("slow answer: %d versions, blocks %s, streamed %q", len(m.Versions), m.Blocks, m.Markdown)
	}

	// 3. A tool call: the card, a refused click, the Approve button, the result.
	tool := fake.PostUserMessage("C1", root, "TOOL please")
	mention("Ev3", tool, root, "TOOL please")
	var card slacktest.Message
	chatopstest.WaitFor(t, "the approval card", func() bool {
		for _, x := range fake.Thread("C1", root) {
			if strings.Contains(string(x.Blocks), "tl_approve") && strings.Contains(string(x.Blocks), "touch approved.txt") {
				card = x
				return true
			}
		}
		return false
	})
	approve := ""
	for _, b := range strings.Split(string(card.Blocks), `"action_id":"tl_approve","value":"`)[1:] {
		approve = b[:strings.IndexByte(b, '"')]
		break
	}
	if approve == "" {
		t.Fatalf("no Approve button in %s", card.Blocks)
	}
	click := func(user string) {
		t.Helper()
		env, err := fake.Envelope("interactive", map[string]any{
			"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": user},
			"trigger_id": fake.NewTrigger(),
			"container":  map[string]any{"type": "message", "message_ts": card.TS, "channel_id": "C1", "thread_ts": root},
			"channel":    map[string]any{"id": "C1"},
			"actions":    []map[string]any{{"action_id": "tl_approve", "block_id": "tl_actions", "value": approve, "type": "button"}},
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	click("UDEV") // may run, may not approve
	chatopstest.WaitFor(t, "the ephemeral refusal", func() bool {
		for _, c := range fake.Calls("chat.postEphemeral") {
			if c.Form.Get("user") == "UDEV" {
				return true
			}
		}
		return false
	})
	click("ULEAD")
	m = final("the tool answer", root, 3)
	if !strings.Contains(string(m.Blocks)+m.Markdown, "Tool result: approved-run") {
		t.Fatalf("tool answer: blocks %s, streamed %q", m.Blocks, m.Markdown)
	}
	chatopstest.WaitFor(t, "the answered card", func() bool {
		c, _ := fake.Message("C1", card.TS)
		return strings.Contains(string(c.Blocks), "Approved") && strings.Contains(string(c.Blocks), "\\u003c@ULEAD\\u003e") && !strings.Contains(string(c.Blocks), "tl_approve")
	})
	if ran, _ := filepath.Glob(filepath.Join(work, "*", "approved.txt")); len(ran) != 1 {
		t.Fatalf("the approved tool did not run in the chat's directory: %v", ran)
	}
	// The three prompts continued one native session.
	reqs := api.MessageRequests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "say hello") {
		t.Errorf("the last turn did not carry the thread's conversation:\n%s", tr)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not stop\n%s", logs.String())
	}
}
