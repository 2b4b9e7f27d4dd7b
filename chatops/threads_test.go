package chatops_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestAccessPolicy(t *testing.T) {
	p := &chatops.Policy{Admins: []string{"slack:UADMIN"}}
	p.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{Allow: []string{"U1"}, Approvers: []string{"U2"}})
	p.Set(chatops.Scope{Platform: "slack", Workspace: "T1"}, chatops.Rules{Allow: []string{"UW"}, Defaults: chatops.Defaults{Agent: "codex"}})
	p.Set(chatops.Scope{Platform: "slack", Channel: "COPEN"}, chatops.Rules{Allow: []string{"*"}, Approvers: []string{"*"}})
	in := func(ch string) chatops.Place {
		return chatops.Place{Platform: "slack", Workspace: "T1", Channel: ch, Thread: "1.1"}
	}
	cases := []struct {
		who   string
		where chatops.Place
		act   chatops.Action
		want  bool
	}{
		{"UADMIN", in("CX"), chatops.ActRun, true},
		{"UADMIN", in("CX"), chatops.ActApprove, true},
		{"U1", in("C1"), chatops.ActRun, true},
		{"U1", in("C1"), chatops.ActApprove, false},
		{"U2", in("C1"), chatops.ActApprove, true},
		{"U2", in("C1"), chatops.ActRun, false},
		{"UW", in("C1"), chatops.ActRun, true},  // workspace allow list
		{"UW", in("CX"), chatops.ActRun, true},  // workspace-wide
		{"U1", in("CX"), chatops.ActRun, false}, // channel list does not reach other channels
		{"UNOBODY", in("CX"), chatops.ActRun, false},
		{"UANY", in("COPEN"), chatops.ActRun, true},
		{"UANY", in("COPEN"), chatops.ActApprove, true},
		{"U1", chatops.Place{Platform: "slack", Workspace: "T2", Channel: "C1"}, chatops.ActRun, true},
		{"UW", chatops.Place{Platform: "slack", Workspace: "T2", Channel: "CX"}, chatops.ActRun, false},
	}
	for _, c := range cases {
		if got := p.Allowed(chatops.User{Platform: "slack", ID: c.who}, c.where, c.act); got != c.want {
			t.Errorf("Allowed(%s, %s, %d) = %v, want %v", c.who, c.where, c.act, got, c.want)
		}
	}
	// Default deny: no rules at all.
	empty := &chatops.Policy{}
	if empty.Allowed(chatops.User{Platform: "slack", ID: "U1"}, in("C1"), chatops.ActRun) {
		t.Error("a policy without rules allowed a user")
	}
	// Another platform's admin id is not an admin here.
	if p.Allowed(chatops.User{Platform: "matrix", ID: "UADMIN"}, in("C1"), chatops.ActRun) {
		t.Error("a matrix user passed a slack place")
	}
	if r := p.Channel(in("C1")); r.Agent != "codex" {
		t.Errorf("channel inherits the workspace's agent: %+v", r)
	}
}

func TestParseThreadCommand(t *testing.T) {
	cases := map[string]string{
		"stop":             "stop:",
		"  Status ":        "status:",
		"model opus":       "model:opus",
		"/model opus 4":    "model:opus 4",
		"mode plan":        "mode:plan",
		"mode whatever":    "",
		"help me fix this": "",
		"help":             "help:",
		"stop the bleed":   "",
		"agent":            "",
		"fork":             "fork:",
		"project web":      "project:web",
		"fix the bug":      "",
		"!new":             "new:",
	}
	for in, want := range cases {
		c, ok := chatops.ParseThreadCommand(in)
		got := ""
		if ok {
			got = c.Name + ":" + c.Arg
		}
		if got != want {
			t.Errorf("ParseThreadCommand(%q) = %q, want %q", in, got, want)
		}
	}
	if c, ok := chatops.ParseSlashCommand("fix the flaky test"); ok {
		t.Errorf("a slash prompt parsed as %+v", c)
	}
	if c, ok := chatops.ParseSlashCommand("agents"); !ok || c.Name != "agents" {
		t.Errorf("ParseSlashCommand(agents) = %+v %v", c, ok)
	}
}

func TestThreads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("default deny refuses and binds nothing", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			err := f.mention(t, "USTRANGER", "do things")
			if !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("HandleMessage = %v, want ErrForbidden", err)
			}
			if len(f.surf.ephemerals) != 1 || !strings.Contains(f.surf.ephemerals[0], "not allowed") {
				t.Fatalf("ephemerals %q", f.surf.ephemerals)
			}
			if _, ok, _ := (chatstore.Store{St: st}).Binding(t.Context(), thread); ok {
				t.Fatal("a refused mention bound the thread")
			}
			// Other channel without rules: even a user allowed in C1 is refused.
			other := thread
			other.Channel = "C2"
			err = f.threads.HandleMessage(t.Context(), chatops.Message{Place: other, User: user("UALLOWED"), Text: "hi", Mentioned: true})
			if !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("unlisted channel: %v", err)
			}
		})

		t.Run("first mention creates the chat with the channel defaults and streams the answer", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(chatopstest.Answer("Hello", " there.\n\n```go\nfmt.Println(1)\n```\n"))
			if err := f.mention(t, "UALLOWED", "say hello"); err != nil {
				t.Fatal(err)
			}
			chatID := f.chatOf(t, thread)
			c, err := st.GetChat(t.Context(), string(chatID))
			if err != nil {
				t.Fatal(err)
			}
			if c.Agent != "fake" || c.Model != "m1" || c.Project != "proj" || c.Cwd != filepath.Join(f.work, string(chatID)) {
				t.Fatalf("chat %+v", c)
			}
			if st, err := os.Stat(c.Cwd); err != nil || !st.IsDir() {
				t.Fatalf("working directory not created: %v", err)
			}
			var ans *message
			waitFor(t, "the final answer", func() bool {
				ans = f.find(thread, func(m *message) bool { return m.view.Footer != "" })
				return ans != nil
			})
			if want := "Hello there.\n\n```go\nfmt.Println(1)\n```\n"; ans.view.Body != want {
				t.Fatalf("final body %q, want %q", ans.view.Body, want)
			}
			if ans.view.Status != "fake · m1 · proj" { // the duration is in the footer

				t.Errorf("status line %q", ans.view.Status)
			}
			for _, w := range []string{"Done in ", "1,200 in / 34 out tokens", "$0.0123"} {
				if !strings.Contains(ans.view.Footer, w) {
					t.Errorf("footer %q lacks %q", ans.view.Footer, w)
				}
			}
			if len(ans.view.Buttons) != 0 {
				t.Errorf("the final message still has buttons: %+v", ans.view.Buttons)
			}
			if len(ans.history) < 2 || len(ans.history[0].Buttons) != 1 || ans.history[0].Buttons[0].ID != chatops.ButtonStop {
				t.Errorf("the first rendering has no Stop button: %+v", ans.history[0])
			}
			// The prompt reached the agent as an interactive run from the user.
			reqs := f.prov.Requests()
			if len(reqs) != 1 || reqs[0].Prompt != "say hello" || reqs[0].Responses == nil {
				t.Fatalf("requests %+v", reqs)
			}
			// A reply without mention is ignored; a second mention continues the chat.
			if err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, User: user("UALLOWED"), Text: "ignored"}); err != nil {
				t.Fatal(err)
			}
			f.prov.Add(chatopstest.Answer("Again."))
			if err := f.mention(t, "UALLOWED", "again"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the second answer", func() bool {
				return f.find(thread, func(m *message) bool { return m.view.Body == "Again." && m.view.Footer != "" }) != nil
			})
			if got := f.chatOf(t, thread); got != chatID {
				t.Fatalf("second mention bound chat %s, want %s", got, chatID)
			}
			if n := len(f.prov.Requests()); n != 2 {
				t.Fatalf("%d runs, want 2 (the reply without mention must not run)", n)
			}
		})

		t.Run("reply without mention where the channel says so", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{Defaults: chatops.Defaults{Agent: "fake"},
				Allow: []string{"UALLOWED"}, ReplyWithoutMention: true})
			f.prov.Add(chatopstest.Answer("one"), chatopstest.Answer("two"))
			if err := f.mention(t, "UALLOWED", "first"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "first answer", func() bool {
				return f.find(thread, func(m *message) bool { return m.view.Body == "one" && m.view.Footer != "" }) != nil
			})
			if err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, User: user("UALLOWED"), Text: "second"}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "second answer", func() bool {
				return f.find(thread, func(m *message) bool { return m.view.Body == "two" && m.view.Footer != "" }) != nil
			})
		})

		t.Run("busy thread queues the message and runs it next", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			release := make(chan struct{})
			f.prov.Add(chatopstest.Gated(release, "working"), chatopstest.Answer("queued answer"))
			if err := f.mention(t, "UALLOWED", "long job"); err != nil {
				t.Fatal(err)
			}
			chatID := f.chatOf(t, thread)
			waitFor(t, "the run to start", func() bool { _, ok := f.bot.Active(chatID); return ok })
			if err := f.mention(t, "UALLOWED", "next please"); err != nil {
				t.Fatal(err)
			}
			if f.threads.Queued(chatID) != 1 {
				t.Fatalf("queued %d", f.threads.Queued(chatID))
			}
			if f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Body, "Queued (1 waiting)") }) == nil {
				t.Fatal("no visible queue notice")
			}
			f.surf.mu.Lock()
			reacted := len(f.surf.reactions) == 1 && strings.HasSuffix(f.surf.reactions[0], ":hourglass_flowing_sand")
			f.surf.mu.Unlock()
			if !reacted {
				t.Fatalf("reactions %q", f.surf.reactions)
			}
			close(release)
			waitFor(t, "the queued answer", func() bool {
				return f.find(thread, func(m *message) bool { return m.view.Body == "queued answer" && m.view.Footer != "" }) != nil
			})
			reqs := f.prov.Requests()
			if len(reqs) != 2 || !strings.HasSuffix(reqs[1].Prompt, "next please") {
				t.Fatalf("requests %+v", reqs)
			}
		})

		t.Run("stop command and Stop button", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(chatopstest.Gated(make(chan struct{}), "spinning"))
			if err := f.mention(t, "UALLOWED", "spin"); err != nil {
				t.Fatal(err)
			}
			chatID := f.chatOf(t, thread)
			var stop *message
			waitFor(t, "the Stop button", func() bool {
				stop = f.find(thread, func(m *message) bool { return len(m.view.Buttons) == 1 && m.view.Buttons[0].ID == chatops.ButtonStop })
				return stop != nil
			})
			ref, err := chatops.DecodeRef(stop.view.Buttons[0].Value)
			if err != nil || ref.ChatID != chatID {
				t.Fatalf("stop ref %+v %v", ref, err)
			}
			// A stranger may not press it.
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("USTRANGER"), Button: chatops.ButtonStop, Ref: ref}); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("stranger Stop = %v", err)
			}
			// A button from another thread is refused.
			other := thread
			other.Thread = "9.9"
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: other, User: user("UALLOWED"), Button: chatops.ButtonStop, Ref: ref}); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("foreign Stop = %v", err)
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UALLOWED"), Button: chatops.ButtonStop, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the stopped footer", func() bool {
				return f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Footer, "Stopped") }) != nil
			})
			f.prov.Add(chatopstest.Gated(make(chan struct{}), "again"))
			if err := f.mention(t, "UALLOWED", "spin again"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the run", func() bool { _, ok := f.bot.Active(chatID); return ok })
			if err := f.mention(t, "UALLOWED", "stop"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the run to stop", func() bool { _, ok := f.bot.Active(chatID); return !ok })
		})

		t.Run("approval card: approvers only, exact id, card says who", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
				in := &agent.Interaction{ID: "perm-7", NativeID: []byte(`"7"`), Kind: agent.KindCommandApproval, Title: "Run a command", Command: "rm -rf build/"}
				emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: in})
				select {
				case r := <-req.Responses:
					got <- r
					emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: r.InteractionID, Status: "approved_for_session", Decision: r.Decision, By: r.By}})
				case <-ctx.Done():
					return nil
				}
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Removed."})
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			if err := f.mention(t, "UALLOWED", "clean"); err != nil {
				t.Fatal(err)
			}
			var card *message
			waitFor(t, "the card", func() bool {
				card = f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "rm -rf build/") })
				return card != nil
			})
			var labels []string
			var approveSession chatops.Button
			for _, b := range card.view.Buttons {
				labels = append(labels, b.Label)
				if b.ID == chatops.ButtonApproveSession {
					approveSession = b
				}
			}
			if strings.Join(labels, "|") != "Approve|Approve for session|Decline|Stop turn" {
				t.Fatalf("buttons %q", labels)
			}
			ref, err := chatops.DecodeRef(approveSession.Value)
			if err != nil || ref.InteractionID != "perm-7" || ref.Decision != agent.DecisionApproveSession {
				t.Fatalf("ref %+v %v", ref, err)
			}
			// UALLOWED may run but not approve.
			err = f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UALLOWED"), Button: approveSession.ID, Ref: ref})
			if !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("non-approver click = %v", err)
			}
			select {
			case r := <-got:
				t.Fatalf("a refused click reached the agent: %+v", r)
			case <-time.After(50 * time.Millisecond):
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: approveSession.ID, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			r := <-got
			if r.InteractionID != "perm-7" || r.Decision != agent.DecisionApproveSession || r.By != "slack:UAPPROVER" {
				t.Fatalf("response %+v", r)
			}
			waitFor(t, "the answered card", func() bool {
				c := f.find(thread, func(m *message) bool { return m.id == card.id })
				return strings.Contains(c.view.Body, "**Approved for this session** by <@UAPPROVER>") && len(c.view.Buttons) == 0
			})
			// A second click on the answered card is refused politely.
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: approveSession.ID, Ref: ref}); err == nil {
				t.Fatal("a second answer was accepted")
			}
		})

		t.Run("question: option buttons and free text", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 2)
			q := func(id string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
				return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
					emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: id, Kind: agent.KindQuestion,
						Questions: []agent.Question{{ID: "q1", Text: "Which color?", Options: []string{"red", "blue"}, AllowOther: true}}}})
					r := <-req.Responses
					got <- r
					emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: id, Status: "answered", By: r.By}})
					emit(agent.Event{Type: agent.EventRunCompleted})
					return nil
				}
			}
			f.prov.Add(q("ask-1"), q("ask-2"))
			if err := f.mention(t, "UADMIN", "pick"); err != nil {
				t.Fatal(err)
			}
			var card *message
			waitFor(t, "the question card", func() bool {
				card = f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "Which color?") })
				return card != nil
			})
			if len(card.view.Buttons) != 4 || card.view.Buttons[1].Label != "blue" || card.view.Buttons[2].ID != chatops.ButtonAnswer {
				t.Fatalf("buttons %+v", card.view.Buttons)
			}
			ref, _ := chatops.DecodeRef(card.view.Buttons[1].Value)
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UADMIN"), Button: card.view.Buttons[1].ID, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.Decision != agent.DecisionAnswer || r.Answers["q1"] != "blue" {
				t.Fatalf("option answer %+v", r)
			}
			waitFor(t, "the first run to end", func() bool {
				return f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Footer, "Done") }) != nil
			})
			if err := f.mention(t, "UADMIN", "pick again"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the second card", func() bool {
				card = f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "Which color?") && len(m.view.Buttons) > 0 })
				return card != nil
			})
			ref, _ = chatops.DecodeRef(card.view.Buttons[2].Value)
			if err := f.threads.HandleAnswer(t.Context(), chatops.Answer{Place: thread, User: user("UADMIN"), Ref: ref, Answers: map[string]string{"q1": "green, really"}}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "ask-2" || r.Answers["q1"] != "green, really" {
				t.Fatalf("free-text answer %+v", r)
			}
		})

		t.Run("question that takes only its options: free text is refused, the question waits", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 1)
			f.prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "only-1", Kind: agent.KindQuestion,
					Questions: []agent.Question{{ID: "q1", Text: "Which colour?", Options: []string{"Red", "Blue"}}}}})
				select {
				case r := <-req.Responses:
					got <- r
					emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "only-1", Status: "answered", By: r.By}})
				case <-ctx.Done():
					return nil
				}
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			if err := f.mention(t, "UADMIN", "pick"); err != nil {
				t.Fatal(err)
			}
			var card *message
			waitFor(t, "the question card", func() bool {
				card = f.find(thread, func(m *message) bool {
					return strings.Contains(m.view.Body, "Which colour?") && len(m.view.Buttons) > 0
				})
				return card != nil
			})
			var ref chatops.Ref
			for _, b := range card.view.Buttons {
				if b.ID == chatops.ButtonAnswer {
					ref, _ = chatops.DecodeRef(b.Value)
				}
			}
			if ref.InteractionID != "only-1" {
				t.Fatalf("no Answer button on %+v", card.view.Buttons)
			}
			answer := func(text string) error {
				return f.threads.HandleAnswer(t.Context(), chatops.Answer{Place: thread, User: user("UADMIN"), Ref: ref, Answers: map[string]string{"q1": text}})
			}
			err := answer("green, really")
			if !errors.Is(err, prompt.ErrNotAnOption) {
				t.Fatalf("free text to an options-only question = %v, want ErrNotAnOption", err)
			}
			told := strings.Join(f.surf.ephemerals, "\n")
			if !strings.Contains(told, "1. Red · 2. Blue") || !strings.Contains(told, "still waiting") {
				t.Errorf("the user was told %q, want the options named", told)
			}
			select {
			case r := <-got:
				t.Fatalf("free text reached the agent: %+v", r)
			default:
			}
			if err := answer("2"); err != nil {
				t.Fatalf("the option's number after a refusal: %v", err)
			}
			if r := <-got; r.InteractionID != "only-1" || r.Answers["q1"] != "Blue" {
				t.Fatalf("answer %+v, want Blue", r)
			}
		})

		t.Run("commands", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(chatopstest.Answer("ok"))
			if err := f.mention(t, "UALLOWED", "hello"); err != nil {
				t.Fatal(err)
			}
			chatID := f.chatOf(t, thread)
			waitFor(t, "answer", func() bool { return f.find(thread, func(m *message) bool { return m.view.Footer != "" }) != nil })
			for _, c := range []string{"model opus", "effort high", "mode plan", "project web"} {
				if err := f.mention(t, "UAPPROVER", c); err != nil {
					t.Fatal(err)
				}
			}
			c, _ := st.GetChat(t.Context(), string(chatID))
			if c.Model != "opus" || c.Effort != "high" || c.Mode != "plan" || c.Project != "web" {
				t.Fatalf("chat after commands %+v", c)
			}
			if err := f.mention(t, "UALLOWED", "status"); err != nil {
				t.Fatal(err)
			}
			if f.find(thread, func(m *message) bool {
				return strings.HasPrefix(m.view.Body, "chat "+string(chatID)) && strings.Contains(m.view.Body, "idle")
			}) == nil {
				t.Fatal("no status reply")
			}
			if err := f.mention(t, "UALLOWED", "help"); err != nil {
				t.Fatal(err)
			}
			if f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "`fork`") }) == nil {
				t.Fatal("no help reply")
			}
			// fork: a new thread bound to a fork of the chat: its settings, the
			// parent's session to fork from, none of its own.
			if err := f.mention(t, "UALLOWED", "fork"); err != nil {
				t.Fatal(err)
			}
			top := thread
			top.Thread = ""
			var head *message
			for _, m := range f.surf.inThread(top) {
				head = m
			}
			if head == nil || !strings.HasPrefix(head.view.Body, "Fork of the chat") {
				t.Fatalf("no fork thread head: %+v", head)
			}
			np := thread
			np.Thread = head.id
			forked, err := st.GetChat(t.Context(), string(f.chatOf(t, np)))
			parent := f.chatOf(t, thread)
			if err != nil || !forked.ForkPending || len(forked.Sessions) != 0 || forked.ForkSessions["fake"] != "s1" ||
				forked.ForkedFrom != string(parent) || forked.Model != "opus" {
				t.Fatalf("forked chat %+v %v", forked, err)
			}
		})

		t.Run("files and images reach the agent", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(chatopstest.Answer("seen"))
			err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, User: user("UALLOWED"), Text: "look", Mentioned: true,
				Files: []chatops.File{
					{Name: "notes.txt", MediaType: "text/plain", Data: []byte("hello file")},
					{Name: "shot.png", MediaType: "image/png", Data: []byte("\x89PNG")},
				}})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the run", func() bool { return len(f.prov.Requests()) == 1 })
			req := f.prov.Requests()[0]
			if !strings.Contains(req.Prompt, "look") || !strings.Contains(req.Prompt, "notes.txt") {
				t.Fatalf("prompt %q", req.Prompt)
			}
			if len(req.Images) != 1 || req.Images[0].MediaType != "image/png" {
				t.Fatalf("images %+v", req.Images)
			}
			c, _ := st.GetChat(t.Context(), string(f.chatOf(t, thread)))
			if b, err := os.ReadFile(filepath.Join(c.Cwd, "notes.txt")); err != nil || string(b) != "hello file" {
				t.Fatalf("saved file %q %v", b, err)
			}
		})

		t.Run("failure is told in plain words", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(func(context.Context, agent.RunRequest, func(agent.Event)) error {
				return errors.New("claude exit: sign-in expired")
			})
			if err := f.mention(t, "UALLOWED", "hi"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the failure", func() bool {
				return f.find(thread, func(m *message) bool {
					return strings.Contains(m.view.Footer, "The run failed") && strings.Contains(m.view.Footer, "sign-in expired")
				}) != nil
			})
			// An unknown agent fails at start: said in the thread.
			f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C9"}, chatops.Rules{Defaults: chatops.Defaults{Agent: "nope"}, Allow: []string{"U1"}})
			p := chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C9", Thread: "5.5"}
			if err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: p, User: user("U1"), Text: "hi", Mentioned: true}); err == nil {
				t.Fatal("an unknown agent started")
			}
			if f.find(p, func(m *message) bool { return strings.Contains(m.view.Body, `unknown agent "nope"`) }) == nil {
				t.Fatalf("no plain failure in the thread: %+v", f.surf.inThread(p))
			}
		})
	})
}
