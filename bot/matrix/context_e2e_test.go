package matrix_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/chatops"
)

// prompts is a scripted agent that hands over each prompt it gets and
// answers briefly.
type prompts chan string

func (p prompts) turn(_ context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s-" + req.RunID})
	p <- req.Prompt
	emit(agent.Event{Type: agent.EventAssistantDelta, Text: "noted"})
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// ask has h mention the bot in the thread (or, with thread "", reply to
// replyTo in the main timeline) and returns the prompt the agent got, after
// its turn ended.
func (w *world) ask(h *human, room id.RoomID, thread, replyTo id.EventID, text string) string {
	w.t.Helper()
	got := make(prompts, 1)
	w.prov.add(got.turn)
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: w.botUser.Name + ": " + text, Mentions: &event.Mentions{UserIDs: []id.UserID{w.botUser.ID}}}
	switch {
	case thread != "":
		c.GetRelatesTo().SetThread(thread, thread)
	case replyTo != "":
		c.GetRelatesTo().SetReplyTo(replyTo)
	}
	resp, err := h.cli.SendMessageEvent(w.t.Context(), room, event.EventMessage, c)
	if err != nil {
		w.t.Fatal(err)
	}
	var prompt string
	select {
	case prompt = <-got:
	case <-time.After(waitLong):
		w.t.Fatalf("the agent got no prompt for %q", text)
	}
	if thread == "" {
		thread = resp.EventID
	}
	chatID := w.binding(room, thread).ChatID
	deadline := time.Now().Add(waitLong)
	for {
		if _, busy := w.core.Active(chatID); !busy {
			break
		}
		if time.Now().After(deadline) {
			w.t.Fatal("the turn did not end")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return prompt
}

// inOrder fails unless s holds each of want, in order.
func inOrder(t *testing.T, s string, want ...string) {
	t.Helper()
	at := 0
	for _, x := range want {
		i := strings.Index(s[at:], x)
		if i < 0 {
			t.Fatalf("prompt lacks %q (in order):\n%s", x, s)
		}
		at += i + len(x)
	}
}

// TestThreadContextOnDendrite: in a real room thread, a chat started there
// gets the thread's earlier messages (display names, a file's name, the
// bot's own marked, its latest edit, a secret scrubbed); what was said
// meanwhile comes with the next mention, once. A mention that replies to a
// message outside a thread gets the chain it replies to; a room with
// thread_context off gets the request alone.
func TestThreadContextOnDendrite(t *testing.T) {
	const secret = "hunter2-s3cr3t-v4lue"
	w := newWorld(t, "postgres")
	w.redact = redact.New(secret)
	w.startBot(false)
	alice, bob := w.human(w.alice, false), w.human(w.bob, false)
	room := w.room(alice, bob, false)
	ctx := t.Context()
	for h, name := range map[*human]string{alice: "Alice Liddell", bob: "Bob Builder"} {
		if err := h.cli.SetDisplayName(ctx, name); err != nil {
			t.Fatal(err)
		}
	}

	root := alice.say(room, "", "The login page returns 500 since this morning.")
	bob.say(room, root, "Same here, log attached.")
	up, err := bob.cli.UploadBytes(ctx, []byte("panic: nil session"), "text/plain")
	if err != nil {
		t.Fatal(err)
	}
	file := &event.MessageEventContent{MsgType: event.MsgFile, Body: "error.log", URL: up.ContentURI.CUString()}
	file.GetRelatesTo().SetThread(root, root)
	if _, err := bob.cli.SendMessageEvent(ctx, room, event.EventMessage, file); err != nil {
		t.Fatal(err)
	}
	// The bot's own earlier message, edited once (its latest text counts).
	own := &event.MessageEventContent{MsgType: event.MsgNotice, Body: "Looking…"}
	own.GetRelatesTo().SetThread(root, root)
	sent, err := w.bot.Client().SendMessageEvent(ctx, room, event.EventMessage, own)
	if err != nil {
		t.Fatal(err)
	}
	edit := &event.MessageEventContent{MsgType: event.MsgNotice, Body: "I looked at the session store earlier."}
	edit.SetEdit(sent.EventID)
	if _, err := w.bot.Client().SendMessageEvent(ctx, room, event.EventMessage, edit); err != nil {
		t.Fatal(err)
	}
	alice.say(room, root, "It started after the deploy; the key was "+secret)

	first := w.ask(bob, room, root, "", "can you fix this?")
	inOrder(t, first,
		"Earlier in this thread",
		"Alice Liddell ("+string(w.alice.ID)+"), ", " UTC:\nThe login page returns 500 since this morning.",
		"Bob Builder ("+string(w.bob.ID)+"), ", "Same here, log attached.",
		"Bob Builder", "(attached: error.log)",
		"Threadline (you, earlier), ", "I looked at the session store earlier.",
		"Alice Liddell", "It started after the deploy; the key was "+redact.Mask,
		"\n\nRequest:\ncan you fix this?")
	if strings.Contains(first, secret) || strings.Contains(first, "Looking…") {
		t.Fatalf("the prompt holds the secret or an edited-away text:\n%s", first)
	}

	alice.say(room, root, "alice: I rolled the deploy back")
	second := w.ask(bob, room, root, "", "and now?")
	block, req, _ := strings.Cut(second, "\n\nRequest:\n")
	if req != "and now?" || !strings.HasPrefix(block, "Said in this thread since your last turn") || !strings.Contains(block, "alice: I rolled the deploy back") {
		t.Fatalf("second prompt:\n%s", second)
	}
	for _, old := range []string{"login page", "can you fix this?", "noted", "session store"} {
		if strings.Contains(block, old) {
			t.Errorf("the meanwhile block repeats %q:\n%s", old, block)
		}
	}
	if third := w.ask(bob, room, root, "", "thanks"); third != "thanks" {
		t.Errorf("third prompt repeats what was said before:\n%s", third)
	}

	// A reply outside a thread: the chain it answers.
	m1 := alice.say(room, "", "Deploy 42 failed at the migrate step.")
	m2 := &event.MessageEventContent{MsgType: event.MsgText, Body: "It says the column exists already."}
	m2.GetRelatesTo().SetReplyTo(m1)
	r2, err := bob.cli.SendMessageEvent(ctx, room, event.EventMessage, m2)
	if err != nil {
		t.Fatal(err)
	}
	chain := w.ask(alice, room, "", r2.EventID, "why?")
	inOrder(t, chain, "Earlier in this thread", "Alice Liddell", "Deploy 42 failed at the migrate step.",
		"Bob Builder", "It says the column exists already.", "\n\nRequest:\nwhy?")
	if strings.Contains(chain, "login page") {
		t.Errorf("the reply chain holds the other thread:\n%s", chain)
	}

	// thread_context off in a room: the request alone.
	quiet := w.room(alice, bob, false)
	next := &chatops.Policy{Admins: w.policy.Admins, Rules: maps.Clone(w.policy.Rules)}
	next.Set(chatops.Scope{Platform: matrix.Platform, Workspace: dendritetest.ServerName, Channel: string(quiet)}, chatops.Rules{ThreadContext: "off"})
	w.policy.Replace(next)
	qroot := alice.say(quiet, "", "private musings")
	if got := w.ask(bob, quiet, qroot, "", "hello"); got != "hello" {
		t.Errorf("a room with thread_context off: prompt %q", got)
	}
}
