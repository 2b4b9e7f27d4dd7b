package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakehttp"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestPostgresRestartEndToEnd: serve on a PostgreSQL of the test's own,
// the Slack fake and the real Claude CLI. The database goes away for a few
// seconds in the middle of a streamed 40-word answer: no word is lost, in
// the database or in Slack, and the answer ends with its footer. Then a
// click on an approval card while the database is away is refused to the
// clicker and runs nothing; the same click once it is back runs the tool.
func TestPostgresRestartEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	pg := storetest.StartPG(t)
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	words := fakehttp.Words(40)
	api := fakeapi.New(t,
		fakeapi.When("WORDS", fakeapi.Slow(len(words), 150*time.Millisecond)),
		fakeapi.When("TOUCH", fakeapi.ToolUse("Bash", map[string]any{"command": "touch touched && echo touched-it", "description": "Touch a file"})))
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"database": map[string]any{"url": pg.URL()},
		"agents":   map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(dir + "/claude-home")}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}, "approvers": []string{"UDEV"}}}},
	})
	code, _, errOut, err := run(t, "", "migrate", "--config", cfgPath)
	if code != 0 || err != nil {
		t.Fatalf("migrate: %d %v\n%s", code, err, errOut)
	}
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	shown := func(root string) string {
		var b strings.Builder
		for _, m := range fake.Thread("C1", root) {
			b.WriteString(m.Text + m.Markdown + string(m.Blocks))
		}
		return b.String()
	}

	// 1. The database restarts in the middle of the answer.
	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> WORDS please"})
	s.mention("EvW", root, "", "WORDS please")
	chatopstest.WaitFor(t, "the answer's fifth word", func() bool { return strings.Contains(shown(root), "word04") })
	pg.Stop()
	chatopstest.WaitFor(t, "serve to notice the outage", func() bool {
		return strings.Contains(s.logs.String(), "holding the events and retrying")
	})
	time.Sleep(3 * time.Second) // the outage: the model streams on meanwhile
	pg.Start()
	msg := s.answer(root, 1)
	text := msg.Text + msg.Markdown + string(msg.Blocks)
	for _, w := range words {
		if !strings.Contains(text, strings.TrimSpace(w)) {
			t.Errorf("Slack's answer lacks %s:\n%s", w, text)
		}
	}
	st, err := store.Open(context.Background(), pg.URL(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chats, err := st.ListChats(context.Background(), 10)
	if err != nil || len(chats) != 1 {
		t.Fatalf("chats %v, %v", chats, err)
	}
	evs, err := st.EventsAfter(context.Background(), agent.ChatID(chats[0].ID), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var stored strings.Builder
	for _, e := range evs {
		if e.Type == string(agent.EventAssistantDelta) {
			stored.Write(e.Payload)
		}
	}
	for _, w := range words {
		if !strings.Contains(stored.String(), strings.TrimSpace(w)) {
			t.Errorf("the database lacks %s", w)
		}
	}

	// 2. A click while the database is away is refused and runs nothing.
	ts := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> TOUCH it"})
	s.mention("EvT", ts, root, "TOUCH it")
	card := s.card(root, "touch touched")
	pg.Stop()
	s.approveCard(root, card)
	chatopstest.WaitFor(t, "the clicker told the answer was not recorded", func() bool {
		for _, m := range fake.Messages() {
			if m.Ephemeral == "UDEV" && strings.Contains(m.Text+string(m.Blocks), "could not be recorded") {
				return true
			}
		}
		return false
	})
	pg.Start()
	if touched, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "touched")); len(touched) > 0 {
		t.Fatalf("the tool ran although the decision was not recorded: %v", touched)
	}
	s.approveCard(root, card)
	s.answer(root, 2)
	if !strings.Contains(shown(root), "touched-it") {
		t.Errorf("the second answer:\n%s", shown(root))
	}
	// The outage was ridden out, not missed: events were held, then stored.
	for _, want := range []string{"holding the events and retrying", "held events stored", "answer refused: the database is unreachable"} {
		if !strings.Contains(s.logs.String(), want) {
			t.Errorf("serve's log lacks %q", want)
		}
	}
}

// TestSlackOutageAcrossRestartEndToEnd: serve, the Slack fake and the real
// Claude CLI. Slack answers 500 to every stream call from the answer's
// fifth word on, until well after the run ended; serve is stopped then and
// started again once Slack answers: the restarted serve completes the same
// message from the stored events, every word, its footer, the stream
// stopped.
func TestSlackOutageAcrossRestartEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	words := fakehttp.Words(40)
	api := fakeapi.New(t, fakeapi.When("WORDS", fakeapi.Slow(len(words), 50*time.Millisecond)))
	fake := slacktest.New(t)
	cfgPath := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)}, map[string]any{
		"agents": map[string]any{"claude": map[string]any{"bin": bin, "env": api.ClaudeEnv(dir + "/claude-home")}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}}},
	})
	s := startServe(t, fake, cfgPath)
	root := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", Text: "<@" + slacktest.BotUserID + "> WORDS please"})
	s.mention("EvW", root, "", "WORDS please")
	shown := func() string {
		var b strings.Builder
		for _, m := range fake.Thread("C1", root) {
			b.WriteString(m.Text + m.Markdown + string(m.Blocks))
		}
		return b.String()
	}
	chatopstest.WaitFor(t, "the answer's fifth word", func() bool { return strings.Contains(shown(), "word04") })
	for _, m := range []string{"chat.appendStream", "chat.stopStream", "chat.update", "chat.postMessage"} {
		fake.FailNextStatus(m, 100000, 500)
	}
	db := filepath.Join(dir, "tl.db")
	chatopstest.WaitFor(t, "the run's end in the database", func() bool {
		st, err := store.Open(context.Background(), db, nil)
		if err != nil {
			return false
		}
		defer st.Close()
		chats, err := st.ListChats(context.Background(), 10)
		if err != nil || len(chats) != 1 {
			return false
		}
		evs, err := st.EventsAfter(context.Background(), agent.ChatID(chats[0].ID), 0, 10000)
		return err == nil && len(evs) > 0 && evs[len(evs)-1].Type == string(agent.EventRunCompleted)
	})
	if strings.Contains(shown(), "Done in") {
		t.Fatal("the answer was finished although Slack failed every call")
	}
	s.stop()
	fake.ClearFaults()
	s2 := startServe(t, fake, cfgPath)
	defer s2.stop()
	msg := s2.answer(root, 1)
	var blocks []struct {
		ID   string `json:"block_id"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(msg.Blocks, &blocks); err != nil {
		t.Fatal(err)
	}
	body := ""
	for _, b := range blocks {
		if b.ID == "tl_body" {
			body = b.Text
		}
	}
	for _, w := range words {
		if strings.Count(body, strings.TrimSpace(w)) != 1 {
			t.Errorf("the completed answer holds %s %d times:\n%s", w, strings.Count(body, strings.TrimSpace(w)), body)
		}
	}
	if len(fake.Calls("chat.stopStream")) == 0 {
		t.Error("the stream was never stopped")
	}
}
