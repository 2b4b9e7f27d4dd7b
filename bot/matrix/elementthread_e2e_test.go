package matrix_test

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/chatops"
)

// sayElement sends text in thread the way Element does where the homeserver
// does not advertise threads: rel_type io.element.thread, with a fallback
// reply to fallback (the thread's latest event).
func sayElement(h *human, room id.RoomID, thread, fallback id.EventID, text string, mention ...id.UserID) id.EventID {
	h.t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text, Mentions: &event.Mentions{UserIDs: mention}}
	c.GetRelatesTo().SetThread(thread, fallback)
	c.RelatesTo.Type = matrix.RelElementThread
	resp, err := h.cli.SendMessageEvent(h.t.Context(), room, event.EventMessage, c)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.EventID
}

// postsIn returns the bot's messages (not edits) in the thread under
// relation rt.
func postsIn(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID, rt event.RelationType) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		c := msgContent(e)
		if c == nil || e.Sender != bot || e.RoomID != room || c.RelatesTo == nil {
			continue
		}
		if c.RelatesTo.Type == rt && c.RelatesTo.EventID == thread {
			out = append(out, e)
		}
	}
	return out
}

// doneWith returns the bot's post in the thread under rt whose current
// content holds text and is done.
func doneWith(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID, rt event.RelationType, text string) *event.Event {
	for _, p := range postsIn(evs, bot, room, thread, rt) {
		if c := current(evs, p); c != nil && strings.Contains(c.Body, text) && strings.Contains(c.Body, "Done") {
			return p
		}
	}
	return nil
}

// recording hands each run request of turn to reqs before running it.
func recording(reqs chan<- agent.RunRequest, turn func(context.Context, agent.RunRequest, func(agent.Event)) error) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		reqs <- req
		return turn(ctx, req, emit)
	}
}

func nextRequest(t *testing.T, reqs <-chan agent.RunRequest) agent.RunRequest {
	t.Helper()
	select {
	case r := <-reqs:
		return r
	case <-t.Context().Done():
		t.Fatal("no run")
	}
	return agent.RunRequest{}
}

// TestElementThreadRelation: Element's unstable thread relation
// (io.element.thread, written where the homeserver does not advertise
// threads, as Dendrite 0.13.8) is a thread like m.thread: a follow-up sent
// with it continues the chat (the same chat, the agent's session resumed)
// and the bot answers with it; a reply "2" with it to an open question card
// answers the card; and the thread's history given to the agent holds the
// messages of both relations.
func TestElementThreadRelation(t *testing.T) {
	w, alice, _, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	reqs := make(chan agent.RunRequest, 4)

	w.prov.add(recording(reqs, script{before: []string{"First answer."}}.turn))
	root := w.askDone(alice, room, "!threadline say something", "First answer.")
	first := nextRequest(t, reqs)
	chatID := w.binding(room, root).ChatID

	// The follow-up, as Element writes it: its fallback reply is the
	// thread's latest event, the bot's answer.
	answer := postWith(alice.snapshot(), bot, room, root, "First answer.")
	w.prov.add(recording(reqs, script{before: []string{"Second answer."}}.turn))
	sayElement(alice, room, root, answer.ID, w.botUser.Name+": and more", bot)
	second := nextRequest(t, reqs)
	alice.wait("the answer in io.element.thread", waitLong, func(evs []*event.Event) bool {
		return doneWith(evs, bot, room, root, matrix.RelElementThread, "Second answer.") != nil
	})
	if string(second.ChatID) != string(chatID) || string(first.ChatID) != string(chatID) {
		t.Errorf("chat ids: first run %q, follow-up %q, thread bound to %q", first.ChatID, second.ChatID, chatID)
	}
	if want := "s-" + first.RunID; second.ResumeID != want {
		t.Errorf("the follow-up resumed %q, want the first run's session %q", second.ResumeID, want)
	}
	if !strings.Contains(second.Prompt, "and more") {
		t.Errorf("follow-up prompt %q", second.Prompt)
	}

	// A question card in the thread is in io.element.thread too, and "2"
	// sent with it (its fallback the card) answers the card.
	w.prov.add(recording(reqs, script{question: true}.turn))
	sayElement(alice, room, root, answer.ID, w.botUser.Name+": pick a color", bot)
	nextRequest(t, reqs)
	var card *event.Event
	alice.wait("the question card in io.element.thread", waitLong, func(evs []*event.Event) bool {
		for _, p := range postsIn(evs, bot, room, root, matrix.RelElementThread) {
			if _, ok := p.Content.Raw["org.threadline.buttons"]; ok && strings.Contains(msgContent(p).Body, "Which color?") {
				card = p
				return true
			}
		}
		return false
	})
	sayElement(alice, room, root, card.ID, "2")
	alice.wait("the answer using green", waitLong, func(evs []*event.Event) bool {
		return doneWith(evs, bot, room, root, matrix.RelElementThread, "You chose green.") != nil
	})
	select {
	case r := <-reqs:
		t.Errorf("the reply \"2\" ran as a prompt: %q", r.Prompt)
	default:
	}

	// The agent's context of the thread reads both relations.
	msgs, err := w.bot.ThreadHistory(t.Context(), chatops.Place{Platform: matrix.Platform, Workspace: dendritetest.ServerName, Channel: string(room), Thread: string(root)}, chatops.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, m := range msgs {
		all.WriteString(m.Text + "\n")
	}
	inOrder(t, all.String(), "say something", "First answer.", "and more", "Second answer.", "pick a color")
}
