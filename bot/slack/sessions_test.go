package slack_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// approvalTurn says something, waits for gate1, asks to approve a command,
// says more once answered, waits for gate2 and ends.
func approvalTurn(gate1, gate2 <-chan struct{}) chatopstest.Turn {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		wait := func(c <-chan struct{}) bool {
			select {
			case <-c:
				return true
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventRunInterrupted})
				return false
			}
		}
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Let me look."})
		if !wait(gate1) {
			return nil
		}
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "toolu_9", NativeID: []byte(`"toolu_9"`), Kind: agent.KindCommandApproval, Title: "Run a command", Command: "make fix"}})
		var r agent.InteractionResponse
		select {
		case r = <-req.Responses:
		case <-ctx.Done():
			emit(agent.Event{Type: agent.EventRunInterrupted})
			return nil
		}
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "toolu_9", Status: "approved", Decision: r.Decision, By: r.By}})
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: " Approved, fixing."})
		if !wait(gate2) {
			return nil
		}
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: " Fixed."})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// TestAgentSessions: each thread's chat is a Slack agent session whose
// status follows the turn (processing, suspended while an approval waits,
// processing again, active at the end), created once with the first prompt
// (scrubbed) as title; Slack's own Stop (agent_session_stopped) stops the
// run as the Stop button does and nothing more is appended to the stream
// Slack halted; a workspace that refuses agent sessions gets the assistant
// thread status instead, found out once.
func TestAgentSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("statuses follow the turn", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto", redact: redact.New("hunter2secret")})
			h.fake.AgentSessions("")
			gate1, gate2 := make(chan struct{}), make(chan struct{})
			h.stack.Prov.Add(approvalTurn(gate1, gate2))
			root := h.fake.PostUserMessage("C1", "", "fix the build, password hunter2secret")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "fix the build, password hunter2secret")), 0); err != nil {
				t.Fatal(err)
			}
			statuses := func(want ...string) func() bool {
				return func() bool { return slices.Equal(h.fake.SessionStatuses("C1", root), want) }
			}
			chatopstest.WaitFor(t, "processing", statuses("processing"))
			close(gate1)
			var card slacktest.Message
			chatopstest.WaitFor(t, "the approval card", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if b, _ := blockText(t, m); strings.Contains(b, "make fix") && len(buttons(t, m)) == 4 {
						card = m
						return true
					}
				}
				return false
			})
			chatopstest.WaitFor(t, "suspended while the approval waits", statuses("processing", "suspended"))
			if _, err := h.fake.Envelope("interactive", blockActions(h.fake, "UAPPROVER", "C1", root, buttons(t, card)[0]), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "processing once approved", statuses("processing", "suspended", "processing"))
			close(gate2)
			chatopstest.WaitFor(t, "the answer and active", func() bool {
				_, _, ok := finalAnswer(t, h.fake, "C1", root)
				return ok && statuses("processing", "suspended", "processing", "active")()
			})
			var titles []string
			for _, c := range h.fake.SessionCalls("C1", root) {
				if c.Title != "" {
					titles = append(titles, c.Title)
				}
			}
			if len(titles) != 1 || strings.Contains(titles[0], "hunter2secret") || !strings.HasPrefix(titles[0], "fix the build") {
				t.Errorf("titles %q", titles)
			}
			if c := h.fake.SessionCalls("C1", root); c[0].Initiator != "UALLOWED" {
				t.Errorf("initiator %+v", c[0])
			}
			if n := len(h.fake.Calls("assistant.threads.setStatus")); n != 0 {
				t.Errorf("%d assistant statuses besides the session", n)
			}
			// A person renames the session: the next turn keeps their title.
			if _, err := h.fake.RenameSession("C1", root, "UALLOWED", "Build fix"); err != nil {
				t.Fatal(err)
			}
			h.stack.Prov.Add(chatopstest.Answer("Again."))
			msg := h.fake.PostUserMessage("C1", root, "again")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", msg, root, "again")), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the second answer", func() bool {
				for _, m := range h.fake.Thread("C1", root) {
					if strings.Contains(m.Markdown, "Again.") && !m.Streaming {
						return h.fake.SessionStatus("C1", root) == "active"
					}
				}
				return false
			})
			for _, c := range h.fake.SessionCalls("C1", root)[4:] {
				if c.Title != "" {
					t.Errorf("titled again: %+v", c)
				}
			}
			if got := h.fake.SessionTitle("C1", root); got != "Build fix" {
				t.Errorf("title %q", got)
			}
		})

		t.Run("Slack's Stop stops the run", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			h.fake.AgentSessions("")
			release := make(chan struct{})
			defer close(release)
			h.stack.Prov.Add(chatopstest.Gated(release, "Working on it."))
			root := h.fake.PostUserMessage("C1", "", "wait")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "wait")), 0); err != nil {
				t.Fatal(err)
			}
			chatopstest.WaitFor(t, "the stream and processing", func() bool {
				for _, x := range h.fake.Thread("C1", root) {
					if x.Streaming && x.Markdown == "Working on it." {
						return h.fake.SessionStatus("C1", root) == "processing"
					}
				}
				return false
			})
			before := len(h.fake.Calls(""))
			_, halted, err := h.fake.StopSession("C1", root, "UALLOWED")
			if err != nil || len(halted) != 1 {
				t.Fatalf("stop: %v %v", halted, err)
			}
			var m slacktest.Message
			chatopstest.WaitFor(t, "the stopped answer and active", func() bool {
				var ok bool
				m, _, ok = finalAnswer(t, h.fake, "C1", root)
				return ok && h.fake.SessionStatus("C1", root) == "active"
			})
			if m.TS != halted[0] || !strings.Contains(string(m.Blocks), "Stopped") {
				t.Fatalf("stopped answer %s: %s", m.TS, m.Blocks)
			}
			for _, c := range h.fake.Calls("")[before:] {
				if (c.Method == "chat.appendStream" || c.Method == "chat.stopStream") && c.Form.Get("ts") == halted[0] {
					t.Errorf("%s on the halted stream: %v", c.Method, c.Form)
				}
			}
			if got := h.fake.SessionStatuses("C1", root); !slices.Equal(got, []string{"processing", "active"}) {
				t.Errorf("statuses %q", got)
			}
		})

		t.Run("no processing left after a restart", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			h.fake.AgentSessions("")
			release := make(chan struct{})
			h.stack.Prov.Add(chatopstest.Gated(release, "Working on it."))
			root := h.fake.PostUserMessage("C1", "", "wait")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "wait")), 0); err != nil {
				t.Fatal(err)
			}
			var ref chatops.Ref
			chatopstest.WaitFor(t, "processing and the Stop button", func() bool {
				for _, x := range h.fake.Thread("C1", root) {
					for _, b := range buttons(t, x) {
						if b.ID == chatops.ButtonStop {
							ref, _ = chatops.DecodeRef(b.Value)
						}
					}
				}
				return ref.ChatID != "" && h.fake.SessionStatus("C1", root) == "processing"
			})
			// The bot goes away while the turn runs; the turn ends unseen.
			h.stop()
			close(release)
			chatopstest.WaitFor(t, "the turn's end", func() bool { _, running := h.stack.Hub.Running(ref.ChatID); return !running })
			if err := h.stack.Hub.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			start(t, st, options{streaming: "auto", fake: h.fake})
			chatopstest.WaitFor(t, "active after the restart", func() bool {
				_, _, ok := finalAnswer(t, h.fake, "C1", root)
				return ok && h.fake.SessionStatus("C1", root) == "active"
			})
			if got := h.fake.SessionStatuses("C1", root); !slices.Equal(got, []string{"processing", "active"}) {
				t.Errorf("statuses %q", got)
			}
		})

		t.Run("a workspace without agent sessions", func(t *testing.T) {
			h := start(t, st, options{streaming: "off"})
			h.fake.AgentSessions("not_authorized")
			for i, text := range []string{"first", "second"} {
				release := make(chan struct{})
				h.stack.Prov.Add(workTurn(release))
				root := h.fake.PostUserMessage("C1", "", text)
				if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", text)), 0); err != nil {
					t.Fatal(err)
				}
				chatopstest.WaitFor(t, "the assistant status", func() bool { return h.fake.Status("C1", root) != "" })
				close(release)
				chatopstest.WaitFor(t, "the answer and the status cleared", func() bool {
					_, _, ok := finalAnswer(t, h.fake, "C1", root)
					return ok && h.fake.Status("C1", root) == ""
				})
				if n := len(h.fake.Calls("agents.sessions.setStatus")); n != 1 {
					t.Errorf("turn %d: %d agents.sessions.setStatus calls, want the one that found them refused", i, n)
				}
			}
		})
	})
}
