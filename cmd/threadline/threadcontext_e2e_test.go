package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// firstPrompt returns the prompt of the first model request whose prompt
// holds marker.
func firstPrompt(t *testing.T, api *fakeapi.Server, marker string) string {
	t.Helper()
	for _, r := range api.MessageRequests() {
		if p := r.Prompt(); strings.Contains(p, marker) {
			return p
		}
	}
	t.Fatalf("no model request's prompt holds %q", marker)
	return ""
}

// stamp is a Slack ts as the thread context words its time.
func stamp(t *testing.T, ts string) string {
	t.Helper()
	sec, _, _ := strings.Cut(ts, ".")
	n, err := strconv.ParseInt(sec, 10, 64)
	if err != nil {
		t.Fatalf("ts %q: %v", ts, err)
	}
	return time.Unix(n, 0).UTC().Format("2006-01-02 15:04 UTC")
}

// TestThreadContextEndToEnd: `threadline serve` with the Slack fake and the
// real Claude CLI (against the scripted API fake, in a loopback-only network
// namespace). UDEV mentions the bot in a thread that already holds three
// people's messages and one of the bot's: the first request the model gets
// is the thread's earlier messages, oldest first, each with its author's
// display name, id and time, the bot's marked as its own, a configured
// secret (an agents.claude.env value) in one of them masked (it reaches no
// request to the model), then the request. Two people then write in the
// thread without addressing the bot: no turn; the next mention's prompt
// carries those two as what was said meanwhile, and the conversation the
// model gets holds them once, also after a third mention.
func TestThreadContextEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	const secret = "sk-ctx-8Hq2Wm5Zr7Tn3Lp9"
	api := fakeapi.New(t, fakeapi.Text("On it."))
	fake, cfgPath := claudeSlackConfig(t, bin, api, dir, secret, map[string]any{"agent": "claude", "allow": []string{"UDEV"}})
	for _, u := range []slacktest.User{
		{ID: "UALICE", Name: "alice", DisplayName: "Alice"},
		{ID: "UBOB", Name: "bob", DisplayName: "Bob"},
		{ID: "UCAROL", Name: "carol", DisplayName: "Carol"},
		{ID: "UDEV", Name: "dev", DisplayName: "Dev"},
	} {
		fake.AddUser(u)
	}

	s := startServe(t, fake, cfgPath)
	defer s.stop()

	// The thread before the bot is asked: three people and the bot itself.
	root := fake.Say(slacktest.Said{User: "UALICE", Channel: "C1", Text: "The login page returns 500 since this morning, <@UBOB> saw it too."})
	bob := fake.Say(slacktest.Said{User: "UBOB", Channel: "C1", ThreadTS: root, Text: "Same here, only on the EU cluster."})
	own := fake.Say(slacktest.Said{User: slacktest.BotUserID, BotID: slacktest.BotID, Channel: "C1", ThreadTS: root, Text: "I looked at the session store earlier: it is full."})
	carol := fake.Say(slacktest.Said{User: "UCAROL", Channel: "C1", ThreadTS: root, Text: "It started after the deploy; the key there was " + secret})

	// The first mention: the model gets the thread, then the request.
	ask := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> can you fix this?"})
	s.mention("EvC1", ask, root, "can you fix this?")
	s.answer(root, 1)
	want := "Earlier in this thread (the messages before you were asked, oldest first):\n\n" +
		"Alice (UALICE), " + stamp(t, root) + ":\nThe login page returns 500 since this morning, @Bob saw it too.\n\n" +
		"Bob (UBOB), " + stamp(t, bob) + ":\nSame here, only on the EU cluster.\n\n" +
		"Threadline (you, earlier), " + stamp(t, own) + ":\nI looked at the session store earlier: it is full.\n\n" +
		"Carol (UCAROL), " + stamp(t, carol) + ":\nIt started after the deploy; the key there was " + redact.Mask + "\n\n" +
		"Request:\ncan you fix this?"
	if got := api.MessageRequests()[0].Prompt(); got != want {
		t.Errorf("the first request the model got:\n%s\n\nwant:\n%s", got, want)
	}
	for i, r := range api.Requests() {
		if strings.Contains(string(r.Raw), secret) {
			t.Errorf("model request %d (%s) holds the secret", i, r.Path)
		}
	}

	// Two people write in the thread without addressing the bot: no turn.
	said := []string{"bob: I rolled back the deploy", "carol: still 500 for me"}
	for i, u := range []string{"UBOB", "UCAROL"} {
		ts := fake.Say(slacktest.Said{User: u, Channel: "C1", ThreadTS: root, Text: said[i]})
		s.send("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID, "api_app_id": slacktest.AppID,
			"event_id": "EvM" + strconv.Itoa(i), "event_time": time.Now().Unix(), "event": map[string]any{
				"type": "message", "channel": "C1", "channel_type": "channel", "user": u, "text": said[i], "ts": ts, "thread_ts": root}})
	}

	// The next mention carries them as said meanwhile, once.
	again := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> and now?"})
	s.mention("EvC2", again, root, "and now?")
	s.answer(root, 2)
	second := firstPrompt(t, api, "Request:\nand now?")
	block, req, _ := strings.Cut(second, "\n\nRequest:\n")
	if req != "and now?" || !strings.HasPrefix(block, "Said in this thread since your last turn") ||
		!strings.Contains(block, "Bob (UBOB), ") || !strings.Contains(block, "Carol (UCAROL), ") ||
		strings.Index(block, said[0]) > strings.Index(block, said[1]) {
		t.Errorf("the second prompt does not carry what was said meanwhile, in order:\n%s", second)
	}
	for _, old := range []string{"login page", "EU cluster", "session store", "can you fix this?", "On it."} {
		if strings.Contains(block, old) {
			t.Errorf("the meanwhile block repeats %q:\n%s", old, block)
		}
	}

	// A third mention with nothing said between: the request alone, and the
	// conversation holds each message of the thread once.
	thanks := fake.Say(slacktest.Said{User: "UDEV", Channel: "C1", ThreadTS: root, Text: "<@" + slacktest.BotUserID + "> thanks"})
	s.mention("EvC3", thanks, root, "thanks")
	s.answer(root, 3)
	if third := firstPrompt(t, api, "thanks"); third != "thanks" {
		t.Errorf("the third prompt carries more than the request:\n%s", third)
	}
	reqs := api.MessageRequests()
	last := reqs[len(reqs)-1].Transcript()
	for _, text := range append(said, "The login page returns 500", "Same here, only on the EU cluster.", "It started after the deploy") {
		if n := strings.Count(last, text); n != 1 {
			t.Errorf("the conversation holds %q %d times, want once:\n%s", text, n, last)
		}
	}
	for _, r := range reqs {
		if p := r.Prompt(); p == said[0] || p == said[1] {
			t.Errorf("an unaddressed message became a prompt: %q", p)
		}
	}
}
