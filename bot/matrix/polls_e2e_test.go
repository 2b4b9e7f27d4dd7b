package matrix_test

import (
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/chatops"
)

// pollIn returns the bot's poll in the thread.
func pollIn(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID) *event.Event {
	for _, e := range evs {
		if e.Type != event.EventUnstablePollStart || e.Sender != bot || e.RoomID != room {
			continue
		}
		if rel := relation(e); rel != nil && rel.GetThreadParent() == thread {
			return e
		}
	}
	return nil
}

func relation(e *event.Event) *event.RelatesTo {
	r, _ := e.Content.Raw["m.relates_to"].(map[string]any)
	if r == nil {
		return nil
	}
	rel := &event.RelatesTo{Type: event.RelationType(str(r["rel_type"])), EventID: id.EventID(str(r["event_id"]))}
	return rel
}

func str(v any) string { s, _ := v.(string); return s }

// pollEnds returns the poll.end events of poll.
func pollEnds(evs []*event.Event, poll id.EventID) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if rel := relation(e); e.Type == event.EventUnstablePollEnd && rel != nil && rel.Type == event.RelReference && rel.EventID == poll {
			out = append(out, e)
		}
	}
	return out
}

// vote answers a poll: in the unstable MSC3381 form Element sends, or in the
// stable m.poll.response form.
func (h *human) vote(room id.RoomID, poll id.EventID, answer string, stable bool) {
	h.t.Helper()
	typ := event.EventUnstablePollResponse
	c := map[string]any{"m.relates_to": map[string]any{"rel_type": "m.reference", "event_id": poll}}
	if stable {
		typ = event.Type{Type: "m.poll.response", Class: event.MessageEventType}
		c["m.selections"] = []string{answer}
	} else {
		c["org.matrix.msc3381.poll.response"] = map[string]any{"answers": []string{answer}}
	}
	if _, err := h.cli.SendMessageEvent(h.t.Context(), room, typ, c); err != nil {
		h.t.Fatal(err)
	}
}

// askColor has alice ask the bot something it answers with the question
// "Which color?" (red, green, blue) and waits for the card and its poll.
func askColor(w *world, alice *human, room id.RoomID) (root id.EventID, card, poll *event.Event) {
	w.t.Helper()
	bot := w.botUser.ID
	w.prov.add(script{question: true}.turn)
	root = alice.say(room, "", w.botUser.Name+": pick a color", bot)
	evs := alice.wait("the question and its poll", waitLong, func(evs []*event.Event) bool {
		return questionCard(evs, bot, room, root) != nil && pollIn(evs, bot, room, root) != nil
	})
	return root, questionCard(evs, bot, room, root), pollIn(evs, bot, room, root)
}

// checkPoll checks the poll offers the question card's options.
func checkPoll(t *testing.T, poll, card *event.Event) {
	t.Helper()
	ps, _ := poll.Content.Raw["org.matrix.msc3381.poll.start"].(map[string]any)
	if ps == nil {
		t.Fatalf("poll content %v", poll.Content.Raw)
	}
	q, _ := ps["question"].(map[string]any)
	answers, _ := ps["answers"].([]any)
	var got []string
	for _, a := range answers {
		m, _ := a.(map[string]any)
		got = append(got, str(m["id"])+"="+str(m["org.matrix.msc1767.text"]))
	}
	want := chatops.ButtonOptionPrefix + "0=red " + chatops.ButtonOptionPrefix + "1=green " + chatops.ButtonOptionPrefix + "2=blue"
	if str(q["org.matrix.msc1767.text"]) != "Which color?" || strings.Join(got, " ") != want ||
		ps["max_selections"] != float64(1) || str(ps["kind"]) != "org.matrix.msc3381.poll.disclosed" {
		t.Errorf("poll %v", ps)
	}
	if fb := str(poll.Content.Raw["org.matrix.msc1767.text"]); !strings.Contains(fb, "2. green") {
		t.Errorf("poll text fallback %q", fb)
	}
	if str(poll.Content.Raw["org.threadline.card"]) != string(card.ID) {
		t.Errorf("poll names card %v, want %s", poll.Content.Raw["org.threadline.card"], card.ID)
	}
	if b := msgContent(card).Body; !strings.Contains(b, "Vote in the poll") {
		t.Errorf("the card does not point to the poll: %q", b)
	}
}

// TestQuestionByPoll: a question with options comes with a native poll in
// the thread; a vote from someone who may not answer (in the stable
// m.poll.response form) is refused with a notice and changes nothing; an
// approver's vote (unstable form) answers the exact request; the poll is then
// ended, once.
func TestQuestionByPoll(t *testing.T) {
	pollFlow(t, false)
}

func pollFlow(t *testing.T, encrypted bool) {
	w, alice, bob, room := started(t, "sqlite", encrypted)
	bot := w.botUser.ID
	root, card, poll := askColor(w, alice, room)
	checkPoll(t, poll, card)

	bob.vote(room, poll.ID, chatops.ButtonOptionPrefix+"0", true)
	alice.wait("the refusal of bob's vote", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "Your vote does not count") != nil
	})
	alice.vote(room, poll.ID, chatops.ButtonOptionPrefix+"1", false)
	evs := alice.wait("the answer using green and the poll's end", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "You chose green.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done") && len(pollEnds(evs, poll.ID)) > 0
	})
	if b := current(evs, card).Body; !strings.Contains(b, "Answered") || !strings.Contains(b, string(w.alice.ID)) {
		t.Errorf("card after the vote: %q", b)
	}
	if postWith(evs, bot, room, root, "You chose red") != nil {
		t.Error("bob's refused vote was taken")
	}
	// Nothing more arrives: one end, no second answer (what the bot does
	// in the thread after a command's answer came before it).
	alice.say(room, root, "!threadline status")
	evs = alice.wait("the status", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "agent fake") != nil
	})
	if n := len(pollEnds(evs, poll.ID)); n != 1 {
		t.Errorf("%d poll ends, want 1", n)
	}
	if e := pollEnds(evs, poll.ID)[0]; e.Sender != bot || !strings.Contains(str(e.Content.Raw["org.matrix.msc1767.text"]), "ended") {
		t.Errorf("poll end %v", e.Content.Raw)
	}
}

// TestPollAfterRestart: a question asked before a restart is answered after
// it by a reaction; the restarted bot finds the question's poll in the
// thread and ends it; a later vote in the ended poll is told the request no
// longer waits.
func TestPollAfterRestart(t *testing.T) {
	w, alice, _, room := started(t, "postgres", false)
	bot := w.botUser.ID
	root, card, poll := askColor(w, alice, room)
	w.stopBot()
	w.startBot(false)

	alice.react(room, card.ID, "3️⃣")
	evs := alice.wait("the answer using blue and the poll's end", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "You chose blue.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done") && len(pollEnds(evs, poll.ID)) > 0
	})
	if n := len(pollEnds(evs, poll.ID)); n != 1 {
		t.Errorf("%d poll ends, want 1", n)
	}
	alice.vote(room, poll.ID, chatops.ButtonOptionPrefix+"0", false)
	alice.wait("the note that the request is settled", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "no longer waiting") != nil
	})
	if p := postWith(alice.snapshot(), bot, room, root, "You chose red"); p != nil {
		t.Error("a vote in the ended poll was taken")
	}
}

// TestReplyAfterRestart: a question asked before a restart is answered
// after it by a reply with an option's number: the restarted bot reads the
// thread's open card back from the homeserver, the answer reaches the exact
// request, and the question's poll is ended.
func TestReplyAfterRestart(t *testing.T) {
	w, alice, _, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	root, card, poll := askColor(w, alice, room)
	w.stopBot()
	w.startBot(false)
	alice.say(room, root, "2")
	evs := alice.wait("the answer using green and the poll's end", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "You chose green.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done") && len(pollEnds(evs, poll.ID)) == 1
	})
	if b := current(evs, card).Body; !strings.Contains(b, "Answered") {
		t.Errorf("card after the reply: %q", b)
	}
}
