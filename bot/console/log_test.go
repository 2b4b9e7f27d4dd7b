package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/console"
)

// TestConsoleLog: /log before any run says so in a line; after a run it
// prints the chat's transcript (the prompt, the text, the tool call with its
// input and output) with a configured secret redacted.
func TestConsoleLog(t *testing.T) {
	const secret = "sk-live-0123456789abcdefCON"
	s, chat := stack(t)
	s.Bot.Redact = redact.New(secret)
	s.Prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Read", Input: []byte(`{"path":".env"}`)}})
		emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Read", Output: "TOKEN=" + secret}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "It is there."})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader("/log\nread the env\n/log\n"), Out: &out, By: "console:t", History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	o := out.String()
	before, after, ok := strings.Cut(o, "It is there.\n— done")
	if !ok {
		t.Fatalf("no answer:\n%s", o)
	}
	if !strings.Contains(before, "This chat has no runs yet") {
		t.Errorf("no plain line before any run:\n%s", before)
	}
	for _, want := range []string{"The log of this chat: 1 run.", "**Prompt** by console:t", "> read the env", "### Tool call: Read",
		`"path": ".env"`, "Output of Read:\n\n```\nTOKEN=" + redact.Mask + "\n```", "It is there.", "**Run completed**"} {
		if !strings.Contains(after, want) {
			t.Errorf("the log lacks %q:\n%s", want, after)
		}
	}
	if strings.Contains(o, secret) {
		t.Errorf("the secret is printed:\n%s", o)
	}
}
