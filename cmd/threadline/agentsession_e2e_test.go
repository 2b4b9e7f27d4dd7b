package main

import (
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

// TestAgentSessionEndToEnd drives `threadline serve` with the REAL Claude
// Code CLI (against the scripted API, in a loopback-only network namespace)
// and the fake Slack with agent sessions on and Slack's rate tiers: the
// thread's agent session is processing while the turn runs, suspended while
// the Bash call waits on its approval card, processing once approved and
// active when the answer is done; it is created once, titled after the
// prompt; no assistant.threads.setStatus is sent besides.
func TestAgentSessionEndToEnd(t *testing.T) {
	bin, dir, ok := realClaudeDir(t)
	if !ok {
		return
	}
	api := fakeapi.New(t,
		fakeapi.When("SESSION", bash("touch session-marker.txt && echo made-it")),
		fakeapi.Text("Done with it."),
	)
	fake := slacktest.New(t)
	fake.SetTiers(1)
	fake.AgentSessions("") // the app declared agent_view
	cfgPath := slackServeConfig(t, dir, bin, api, fake, "UDEV")
	s := startServe(t, fake, cfgPath)
	defer s.stop()
	t.Cleanup(func() {
		if t.Failed() {
			for _, m := range fake.Messages() {
				t.Logf("slack %s/%s: %s %s %s", m.ThreadTS, m.TS, m.Text, m.Markdown, m.Blocks)
			}
		}
	})

	root := fake.PostUserMessage("C1", "", "SESSION run the marker")
	s.mention("EvSess1", root, "", "SESSION run the marker")
	card := s.card(root, "session-marker.txt")
	chatopstest.WaitFor(t, "suspended at the approval", func() bool { return fake.SessionStatus("C1", root) == "suspended" })
	s.approveCard(root, card)
	s.answer(root, 1)
	chatopstest.WaitFor(t, "active after the turn", func() bool { return fake.SessionStatus("C1", root) == "active" })
	got := fake.SessionStatuses("C1", root)
	t.Logf("session statuses %q, calls %+v", got, fake.SessionCalls("C1", root))
	if !slices.Equal(got, []string{"processing", "suspended", "processing", "active"}) {
		t.Errorf("session statuses %q", got)
	}
	calls := fake.SessionCalls("C1", root)
	if calls[0].Title != "SESSION run the marker" || calls[0].Initiator != "UDEV" {
		t.Errorf("the session's first call %+v", calls[0])
	}
	for _, c := range calls[1:] {
		if c.Title != "" {
			t.Errorf("titled again: %+v", c)
		}
	}
	if n := len(fake.Calls("assistant.threads.setStatus")); n != 0 {
		t.Errorf("%d assistant statuses besides the session", n)
	}
}
