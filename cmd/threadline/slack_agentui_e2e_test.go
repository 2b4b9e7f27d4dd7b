package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// planThenBash is a turn of the scripted API: a plan of three items made
// with the CLI's todo tools (Claude Code 2.1.328 has no TodoWrite; it offers
// TaskCreate and TaskUpdate), the first item marked done, then a Bash call,
// then the answer with the tool's result.
func planThenBash(req *fakeapi.Request) *fakeapi.Reply {
	if !strings.Contains(req.Prompt(), "WORK") {
		return nil
	}
	results := 0
	var last string
	for _, m := range req.Body.Messages {
		for _, r := range m.ToolResults() {
			results++
			last = r.ResultText()
		}
	}
	call := func(id, name string, input map[string]any, text ...string) *fakeapi.Reply {
		var blocks []fakeapi.ReplyBlock
		if len(text) > 0 {
			blocks = append(blocks, fakeapi.ReplyBlock{Type: "text", Chunks: text})
		}
		return &fakeapi.Reply{Blocks: append(blocks, fakeapi.ReplyBlock{Type: "tool_use", ID: id, Name: name, Input: input})}
	}
	items := []string{"Create the file", "Check it", "Report"}
	switch {
	case results == 0:
		return call("toolu_task00", "TaskCreate", map[string]any{"subject": items[0], "description": items[0], "activeForm": items[0]}, "I'll plan ", "first.")
	case results < 3:
		return call(fmt.Sprintf("toolu_task%02d", results), "TaskCreate", map[string]any{"subject": items[results], "description": items[results], "activeForm": items[results]})
	case results == 3:
		return call("toolu_task03", "TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})
	case results == 4:
		return call("toolu_bash01", "Bash", map[string]any{"command": "touch agentui.txt && echo made-it", "description": "Create agentui.txt"}, "I'll create ", "the file now.")
	}
	return fakeapi.TextReply("Tool finished: ", strings.TrimSpace(last))
}

// TestSlackAgentUIEndToEnd drives `threadline serve` with the REAL Claude
// Code CLI (against the scripted API, in a loopback-only network namespace)
// and the fake Slack with Slack's rate tiers, in the default native
// streaming mode: the thread gets an assistant status before the first text
// and it is cleared at the end; Claude's todo list shows as a plan with its
// three items; the Bash call (approved on its card) is a task card that ends
// complete between the paragraphs; the status line shows the model Claude
// reported; while the answer streams its Stop button is in a companion
// message, which is deleted at the end; and that Stop stops a slow stream.
func TestSlackAgentUIEndToEnd(t *testing.T) {
	bin, dir, ok := realClaudeDir(t)
	if !ok {
		return
	}
	work := filepath.Join(dir, "work")
	api := fakeapi.New(t, planThenBash,
		fakeapi.When("SLOW", fakeapi.Slow(200, 50*time.Millisecond)),
		fakeapi.Text("Hello."),
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fake := slacktest.New(t)
	fake.SetTiers(1)
	cfgPath := slackServeConfig(t, dir, bin, api, fake, "UDEV")
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() { done <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()
	if err := fake.WaitConnected(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	envelope := func(typ string, payload map[string]any) {
		t.Helper()
		env, err := fake.Envelope(typ, payload, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	mention := func(text string) string {
		t.Helper()
		n++
		root := fake.PostUserMessage("C1", "", text)
		envelope("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
			"event_id": "EvUI" + string(rune('0'+n)), "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_mention", "user": "UDEV", "channel": "C1", "ts": root, "event_ts": root, "text": "<@" + slacktest.BotUserID + "> " + text}})
		return root
	}
	click := func(root, msgTS, actionID, value string) {
		t.Helper()
		envelope("interactive", map[string]any{
			"type": "block_actions", "team": map[string]any{"id": slacktest.TeamID}, "user": map[string]any{"id": "UDEV"},
			"trigger_id": fake.NewTrigger(),
			"container":  map[string]any{"type": "message", "message_ts": msgTS, "channel_id": "C1", "thread_ts": root},
			"channel":    map[string]any{"id": "C1"},
			"actions":    []map[string]any{{"action_id": actionID, "block_id": "tl_actions", "value": value, "type": "button"}},
		})
	}
	button := func(m slacktest.Message, actionID string) string {
		for _, b := range strings.Split(string(m.Blocks), `"action_id":"`+actionID+`","value":"`)[1:] {
			return b[:strings.IndexByte(b, '"')]
		}
		return ""
	}
	final := func(what, root string) slacktest.Message {
		t.Helper()
		var out slacktest.Message
		chatopstest.WaitFor(t, what, func() bool {
			for _, m := range fake.Thread("C1", root) {
				if !m.Streaming && (strings.Contains(string(m.Blocks), "Done in") || strings.Contains(string(m.Blocks), "Stopped")) {
					out = m
					return fake.Status("C1", root) == "" && len(fake.Calls("chat.delete")) >= n
				}
			}
			return false
		})
		return out
	}

	// 1. A plan, a Bash call on approval, the answer.
	root := mention("WORK please")
	var card slacktest.Message
	chatopstest.WaitFor(t, "the Bash approval card", func() bool {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "tl_approve") && strings.Contains(string(m.Blocks), "agentui.txt") {
				card = m
				return true
			}
		}
		return false
	})
	// While the stream runs, Stop is at hand in the companion message.
	var companion bool
	for _, m := range fake.Thread("C1", root) {
		if button(m, "tl_stop") != "" && !m.Streaming {
			companion = true
		}
	}
	if !companion {
		t.Errorf("no companion Stop message while the answer streams: %+v", fake.Thread("C1", root))
	}
	click(root, card.TS, "tl_approve", button(card, "tl_approve"))
	m := final("the answer", root)
	if want := "I'll plan first.\n\nI'll create the file now.\n\nTool finished: made-it"; m.Markdown != want {
		t.Errorf("streamed %q, want %q", m.Markdown, want)
	}
	var bash *slacktest.Task
	var plan []slacktest.Task
	for i, tk := range m.Tasks {
		switch {
		case tk.ID == "toolu_bash01":
			bash = &m.Tasks[i]
		case strings.HasPrefix(tk.ID, "plan-"):
			plan = append(plan, tk)
		}
	}
	if bash == nil || bash.Status != "complete" || !strings.HasPrefix(bash.Title, "Bash") || !strings.Contains(bash.Output, "made-it") ||
		bash.After != len("I'll plan first.\n\nI'll create the file now.") {
		t.Errorf("Bash task card %+v (tasks %+v)", bash, m.Tasks)
	}
	t.Logf("task cards %+v; plan %q; statuses %+v", m.Tasks, m.PlanTitle, fake.StatusHistory("C1", root))
	if m.PlanTitle == "" || len(plan) != 3 || plan[0].Title != "Create the file" || plan[0].Status != "complete" || plan[1].Status != "pending" || plan[2].Title != "Report" {
		t.Errorf("plan %q %+v", m.PlanTitle, plan)
	}
	var shown []string
	for _, c := range fake.StatusHistory("C1", root) {
		if !c.ByReply {
			shown = append(shown, c.Status)
		}
	}
	if len(shown) < 2 || shown[0] != "is thinking…" || shown[len(shown)-1] != "" {
		t.Errorf("statuses %q", shown)
	}
	var status struct {
		Elements []struct {
			Text string `json:"text"`
		} `json:"elements"`
	}
	var blocks []json.RawMessage
	_ = json.Unmarshal(m.Blocks, &blocks)
	if len(blocks) > 0 {
		_ = json.Unmarshal(blocks[0], &status)
	}
	if len(status.Elements) == 0 || !strings.HasPrefix(status.Elements[0].Text, "claude · ") || strings.Contains(status.Elements[0].Text, "(default)") ||
		strings.Count(string(m.Blocks), "Done in") != 1 {
		t.Errorf("status line of %s", m.Blocks)
	}
	var firstStatus, firstText time.Time
	for _, c := range fake.Calls("") {
		if firstStatus.IsZero() && c.Method == "assistant.threads.setStatus" && c.Form.Get("thread_ts") == root && c.Form.Get("status") != "" && c.Status == 200 {
			firstStatus = c.At
		}
		if firstText.IsZero() && strings.Contains(c.Form.Get("chunks"), "plan ") {
			firstText = c.At
		}
	}
	if firstStatus.IsZero() || !firstStatus.Before(firstText) {
		t.Errorf("first status %v, first text %v: %+v", firstStatus, firstText, fake.StatusHistory("C1", root))
	}
	for _, x := range fake.Thread("C1", root) {
		if button(x, "tl_stop") != "" {
			t.Errorf("a Stop button is left after the run: %s", x.Blocks)
		}
	}
	if ran, _ := filepath.Glob(filepath.Join(work, "*", "agentui.txt")); len(ran) != 1 {
		t.Errorf("the Bash call did not run: %v", ran)
	}

	// 2. The companion's Stop stops a slow native stream.
	slow := mention("SLOW please")
	var stopMsg slacktest.Message
	chatopstest.WaitFor(t, "the companion Stop of the slow answer", func() bool {
		for _, x := range fake.Thread("C1", slow) {
			if button(x, "tl_stop") != "" && !x.Streaming {
				stopMsg = x
			}
			if x.Streaming && strings.Contains(x.Markdown, "word03") && stopMsg.TS != "" {
				return true
			}
		}
		return false
	})
	click(slow, stopMsg.TS, "tl_stop", button(stopMsg, "tl_stop"))
	m = final("the stopped answer", slow)
	if !strings.Contains(string(m.Blocks), "Stopped") || strings.Contains(m.Markdown, "word199") {
		t.Errorf("stopped answer: blocks %s, streamed %d bytes", m.Blocks, len(m.Markdown))
	}
	limited := 0
	for _, c := range fake.Calls("") {
		if c.Status == 429 {
			limited++
		}
	}
	if limited > 0 {
		t.Errorf("%d 429s", limited)
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
