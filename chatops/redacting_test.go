package chatops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestOutboundRedaction: a secret the agent prints (in its answer or a tool
// step) never reaches the platform.
func TestOutboundRedaction(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	const secret = "ghp_s3cr3tProjectToken42"
	f := setup(t, st, chatops.DeskOptions{Redact: redact.New(secret)})
	f.prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Summary: "Bash: echo " + secret}})
		emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash"}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "The token is " + secret + "."})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	if err := f.mention(t, "UALLOWED", "print the token"); err != nil {
		t.Fatal(err)
	}
	var done *message
	waitFor(t, "the answer", func() bool {
		done = f.find(thread, func(m *message) bool { return m.view.Footer != "" })
		return done != nil
	})
	if !strings.Contains(done.view.Body, "The token is "+redact.Mask+".") {
		t.Errorf("body %q", done.view.Body)
	}
	for _, m := range f.surf.inThread(thread) {
		all := m.upload
		for _, v := range append(m.history, m.view) {
			all += v.Status + v.Body + v.Footer + v.Fallback + strings.Join(v.Steps, "\n")
		}
		if strings.Contains(all, secret) {
			t.Errorf("a message carried the secret: %+v", m.view)
		}
	}
}
