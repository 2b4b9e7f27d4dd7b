package matrix_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// twoQuestions is a turn that asks two questions at once ("Which color?"
// red/green/blue, then "Which letter?" a/b/c) and says which one each
// answer reached.
func twoQuestions(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s-" + req.RunID})
	emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
		ID: "ask-1", NativeID: json.RawMessage(`1`), Kind: agent.KindQuestion, Title: "Which color?",
		Questions: []agent.Question{{ID: "color", Text: "Which color?", Options: []string{"red", "green", "blue"}}},
	}})
	emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
		ID: "ask-2", NativeID: json.RawMessage(`2`), Kind: agent.KindQuestion, Title: "Which letter?",
		Questions: []agent.Question{{ID: "letter", Text: "Which letter?", Options: []string{"a", "b", "c"}}},
	}})
	for range 2 {
		resp, ok := awaitAnswer(ctx, req)
		if !ok {
			emit(agent.Event{Type: agent.EventRunInterrupted})
			return nil
		}
		got := resp.Answers["color"] + resp.Answers["letter"]
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Got " + string(resp.InteractionID) + "=" + got + ". "})
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: agent.StatusAnswered, Decision: resp.Decision, By: resp.By}})
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// sayReply sends a message in thread that replies to target (a real reply,
// not the thread's fallback).
func sayReply(h *human, room id.RoomID, thread, target id.EventID, text string) id.EventID {
	h.t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text, Mentions: &event.Mentions{}}
	c.GetRelatesTo().SetThread(thread, thread).SetReplyTo(target)
	resp, err := h.cli.SendMessageEvent(h.t.Context(), room, event.EventMessage, c)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.EventID
}

// cardWith returns the bot's post in the thread with buttons whose body
// contains text.
func cardWith(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID, text string) *event.Event {
	for _, p := range botPosts(evs, bot, room, thread) {
		if _, ok := p.Content.Raw["org.threadline.buttons"]; ok && strings.Contains(msgContent(p).Body, text) {
			return p
		}
	}
	return nil
}

// TestReplyAnswersTheCardItRepliesTo: with two questions open in a thread, a
// number without a reply to either is not guessed (a notice asks which), a
// reply to the older card answers the older one, and then a plain number
// answers the one left.
func TestReplyAnswersTheCardItRepliesTo(t *testing.T) {
	w, alice, _, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	w.prov.add(twoQuestions)
	root := alice.say(room, "", w.botUser.Name+": ask me two things", bot)
	evs := alice.wait("both question cards", waitLong, func(evs []*event.Event) bool {
		return cardWith(evs, bot, room, root, "Which color?") != nil && cardWith(evs, bot, room, root, "Which letter?") != nil
	})
	q1 := cardWith(evs, bot, room, root, "Which color?")

	alice.say(room, root, "2")
	alice.wait("the question which request is answered", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "2 requests are waiting") != nil
	})
	sayReply(alice, room, root, q1.ID, "2")
	alice.wait("the answer of the older card", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "Got ask-1=green.") != nil
	})
	if p := postWith(alice.snapshot(), bot, room, root, "Got ask-2"); p != nil {
		t.Fatalf("the newer card was answered: %q", current(alice.snapshot(), p).Body)
	}
	alice.say(room, root, "3")
	alice.wait("the answer of the card left", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Got ask-2=c.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
}

// secretQuestion is a turn that asks for a secret and says whether it got
// one (never the value).
func secretQuestion(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s-" + req.RunID})
	emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
		ID: "ask-s", NativeID: json.RawMessage(`3`), Kind: agent.KindQuestion, Title: "API token?",
		Questions: []agent.Question{{ID: "token", Text: "API token?", Secret: true}},
	}})
	resp, ok := awaitAnswer(ctx, req)
	if !ok {
		emit(agent.Event{Type: agent.EventRunInterrupted})
		return nil
	}
	status := agent.StatusDeclined
	if resp.Decision == agent.DecisionAnswer {
		status = agent.StatusAnswered
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Got the token. "})
	} else {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "No token. "})
	}
	emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: status, Decision: resp.Decision, By: resp.By}})
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// TestSecretQuestionRefusesReplies: a secret question's card does not invite
// a reply in the room; a reply with the secret is redacted and refused with
// a notice, never answered, from the approver and from anyone else (bob, who
// may run but not approve: his reply is neither an answer nor a follow-up
// prompt); "decline" declines it.
func TestSecretQuestionRefusesReplies(t *testing.T) {
	w, alice, bob, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	// The bot may redact others' events (moderator).
	var pl event.PowerLevelsEventContent
	if err := alice.cli.StateEvent(t.Context(), room, event.StatePowerLevels, "", &pl); err != nil {
		t.Fatal(err)
	}
	pl.SetUserLevel(bot, 50)
	if _, err := alice.cli.SendStateEvent(t.Context(), room, event.StatePowerLevels, "", &pl); err != nil {
		t.Fatal(err)
	}
	w.prov.add(secretQuestion)
	root := alice.say(room, "", w.botUser.Name+": deploy", bot)
	evs := alice.wait("the secret question card", waitLong, func(evs []*event.Event) bool {
		return cardWith(evs, bot, room, root, "API token?") != nil
	})
	card := cardWith(evs, bot, room, root, "API token?")
	body := msgContent(card).Body
	if !strings.Contains(body, "asks for a secret: do not reply with it in this room") || strings.Contains(body, "reply in this thread with your answer") {
		t.Errorf("secret card %q", body)
	}
	reply := sayReply(alice, room, root, card.ID, "hunter2-very-secret")
	evs = alice.wait("the refusal", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "I removed your reply") != nil
	})
	gone, err := alice.cli.GetEvent(t.Context(), room, reply)
	if err != nil {
		t.Fatal(err)
	}
	if _, has := gone.Content.Raw["body"]; has || gone.Unsigned.RedactedBecause == nil {
		t.Errorf("the reply with the secret is not redacted: %v, redacted because %v", gone.Content.Raw, gone.Unsigned.RedactedBecause)
	} else if gone.Unsigned.RedactedBecause.Sender != bot {
		t.Errorf("the reply was redacted by %s, want the bot", gone.Unsigned.RedactedBecause.Sender)
	}
	for _, p := range botPosts(evs, bot, room, root) {
		if strings.Contains(current(evs, p).Body, "hunter2") {
			t.Errorf("the secret was echoed: %q", current(evs, p).Body)
		}
	}
	bobs := sayReply(bob, room, root, card.ID, "bobs-pasted-secret-42")
	bob.wait("bob's refusal", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "Only an approver can answer") != nil
	})
	if gone, err := bob.cli.GetEvent(t.Context(), room, bobs); err != nil {
		t.Fatal(err)
	} else if _, has := gone.Content.Raw["body"]; has || gone.Unsigned.RedactedBecause == nil {
		t.Errorf("bob's reply with a secret is not redacted: %v", gone.Content.Raw)
	}
	alice.say(room, root, "decline")
	evs = alice.wait("the declined question", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "No token.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	if postWith(evs, bot, room, root, "Got the token") != nil {
		t.Error("the secret reply was taken as the answer")
	}
	// Nothing of bob's reply was queued as a prompt: the next turn is the
	// next mention's, with its own prompt.
	w.prov.add(func(_ context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "prompt was: " + req.Prompt})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	alice.say(room, root, w.botUser.Name+": ping", bot)
	evs = alice.wait("the next turn", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "prompt was:") != nil
	})
	if got := current(evs, postWith(evs, bot, room, root, "prompt was:")).Body; !strings.Contains(got, "ping") || strings.Contains(got, "bobs-pasted-secret") {
		t.Errorf("the turn after the secret question: %q", got)
	}
}
