package matrix_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
)

// waitLong bounds a wait for what the bot does (45 s, scaled by
// THREADLINE_TEST_TIMEOUT_SCALE).
var waitLong = dendritetest.Scale(45 * time.Second)

// cardPost returns the bot's post in the thread that carries approval buttons.
func cardPost(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID) *event.Event {
	for _, p := range botPosts(evs, bot, room, thread) {
		if bs, ok := p.Content.Raw["org.threadline.buttons"].([]any); ok && len(bs) > 0 {
			if strings.Contains(jsonString(bs), chatops.ButtonApprove) {
				return p
			}
		}
	}
	return nil
}

func jsonString(v any) string {
	var b strings.Builder
	for _, x := range v.([]any) {
		if m, ok := x.(map[string]any); ok {
			s, _ := m["id"].(string)
			b.WriteString(s + " ")
		}
	}
	return b.String()
}

func (w *world) binding(room id.RoomID, thread id.EventID) chatops.Binding {
	w.t.Helper()
	b, ok, err := chatstore.Store{St: w.st}.Binding(w.t.Context(), chatops.Place{Platform: matrix.Platform, Workspace: dendritetest.ServerName, Channel: string(room), Thread: string(thread)})
	if err != nil || !ok {
		w.t.Fatalf("thread %s not bound (%v)", thread, err)
	}
	return b
}

// approvalFlow is the main scenario: mention → thread reply →
// streamed edits → an unauthorized reaction ignored → approval by reaction →
// card and answer edited to their final content.
func approvalFlow(t *testing.T, encrypted bool) {
	w := newWorld(t, "postgres")
	w.startBot(encrypted)
	alice := w.human(w.alice, encrypted)
	bob := w.human(w.bob, encrypted)
	room := w.room(alice, bob, encrypted)
	bot := w.botUser.ID

	w.prov.add(script{
		before:   []string{"Cleaning **the build**.\n\n", "Checking `build/`… ", "found 3 files. "},
		approval: true,
		after:    []string{"\n\nRemoved them. ", "All ", "done."},
		pause:    250 * time.Millisecond,
	}.turn)
	root := alice.say(room, "", w.botUser.Name+": clean the build", bot)

	// The answer streams into a thread on the mention, then the card appears.
	evs := alice.wait("the approval card", waitLong, func(evs []*event.Event) bool { return cardPost(evs, bot, room, root) != nil })
	card := cardPost(evs, bot, room, root)
	answer := postWith(evs, bot, room, root, "Cleaning")
	if answer == nil {
		t.Fatalf("no answer message in the thread:\n%s", dump(evs))
	}
	if rel := msgContent(answer).RelatesTo; rel.GetThreadParent() != root || rel.Type != event.RelThread {
		t.Fatalf("answer relates %+v, want m.thread on %s", rel, root)
	}
	if !strings.Contains(msgContent(card).Body, "rm -rf build") || !strings.Contains(msgContent(card).Body, matrix.KeyApprove) {
		t.Errorf("card body %q", msgContent(card).Body)
	}
	// The bot seeds the answer reactions on its card.
	alice.wait("the seeded reactions", waitLong, func(evs []*event.Event) bool {
		return slices.ContainsFunc(evs, func(e *event.Event) bool {
			r := e.Content.AsReaction()
			return e.Type == event.EventReaction && e.Sender == bot && r.RelatesTo.GetAnnotationID() == card.ID && r.RelatesTo.GetAnnotationKey() == matrix.KeyApprove
		})
	})
	b := w.binding(room, root)
	run, ok := w.svc.Active(b.ChatID)
	if !ok {
		t.Fatal("no active run")
	}

	// bob may chat but not approve: his ✅ is refused with a notice and the
	// run keeps waiting.
	bob.react(room, card.ID, matrix.KeyApprove)
	alice.wait("the refusal to bob", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "not allowed to answer") != nil
	})
	if in, err := w.st.GetInteraction(t.Context(), run.ID, "perm-1"); err != nil || in.Status != store.InteractionPending {
		t.Fatalf("after bob's reaction the interaction is %+v (%v), want pending", in, err)
	}
	if _, ok := w.svc.Active(b.ChatID); !ok {
		t.Fatal("the run ended after an unauthorized reaction")
	}

	// alice approves by reaction: the card shows the outcome, the answer ends.
	alice.react(room, card.ID, matrix.KeyApprove)
	alice.wait("the final answer", waitLong, func(evs []*event.Event) bool {
		c := current(evs, answer)
		return c != nil && strings.Contains(c.Body, "All done.") && strings.Contains(c.Body, "Done")
	})
	evs = alice.wait("the card's outcome", waitLong, func(evs []*event.Event) bool {
		c := current(evs, card)
		return c != nil && strings.Contains(c.Body, "Approved") && strings.Contains(c.Body, string(w.alice.ID))
	})
	select {
	case <-run.Done():
	case <-time.After(waitLong):
		t.Fatal("run did not end")
	}
	if in, err := w.st.GetInteraction(t.Context(), run.ID, "perm-1"); err != nil || in.Status != store.InteractionApproved || in.ResolvedBy != "matrix:"+string(w.alice.ID) {
		t.Errorf("interaction %+v (%v)", in, err)
	}

	// One answer message, edited in place several times, every edit relative
	// to the original event, the final one with HTML and a plain body.
	if n := len(botPosts(evs, bot, room, root)); n != 3 { // answer, card, bob's refusal
		t.Errorf("bot posted %d messages in the thread, want 3:\n%s", n, dump(evs))
	}
	edits := editsOf(evs, answer.ID)
	if len(edits) < 3 {
		t.Errorf("answer edited %d times, want streamed edits", len(edits))
	}
	for _, e := range evs {
		c := msgContent(e)
		if c == nil || e.Sender != bot || c.RelatesTo.GetReplaceID() == "" {
			continue
		}
		target := c.RelatesTo.GetReplaceID()
		if !slices.ContainsFunc(botPosts(evs, bot, room, root), func(p *event.Event) bool { return p.ID == target }) {
			t.Errorf("edit %s targets %s, not an original message of the bot", e.ID, target)
		}
		if c.NewContent == nil || c.NewContent.Body == "" {
			t.Errorf("edit %s has no m.new_content", e.ID)
		}
	}
	final := current(evs, answer)
	if final.Format != event.FormatHTML || !strings.Contains(final.FormattedBody, "<strong>the build</strong>") ||
		!strings.Contains(final.FormattedBody, "<code>build/</code>") {
		t.Errorf("final formatted_body %q", final.FormattedBody)
	}
	if !strings.Contains(final.Body, "Cleaning **the build**.") || !strings.Contains(final.Body, "Removed them. All done.") {
		t.Errorf("final body %q", final.Body)
	}
	if strings.Contains(final.Body, matrix.KeyStop) {
		t.Errorf("the final answer still offers Stop: %q", final.Body)
	}
	if !alice.sawTyping(bot) {
		t.Error("alice never saw the bot typing")
	}
	if encrypted {
		for _, e := range []*event.Event{answer, card, edits[len(edits)-1]} {
			if !e.Mautrix.WasEncrypted {
				t.Errorf("%s reached alice unencrypted in an encrypted room", e.ID)
			}
		}
	}
}

func TestApprovalByReaction(t *testing.T) {
	approvalFlow(t, false)
}

// restartFlow stops the bot in the middle of a run; the agent goes on; a new
// bot process over the same database edits the same answer to its end and
// posts nothing twice, then answers a follow-up in the thread.
func restartFlow(t *testing.T, encrypted bool) {
	w := newWorld(t, "postgres")
	w.startBot(encrypted)
	alice := w.human(w.alice, encrypted)
	bob := w.human(w.bob, encrypted)
	room := w.room(alice, bob, encrypted)
	bot := w.botUser.ID

	gate := make(chan struct{})
	w.prov.add(script{before: []string{"Part one. ", "Part two. "}, after: []string{"Part three. ", "Part four."}, gate: gate, pause: 200 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": count to four", bot)
	evs := alice.wait("three parts", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Part one")
		return p != nil && strings.Contains(current(evs, p).Body, "Part three.")
	})
	answer := postWith(evs, bot, room, root, "Part one")
	b := w.binding(room, root)
	run, ok := w.svc.Active(b.ChatID)
	if !ok {
		t.Fatal("no active run")
	}

	device := w.bot.Client().DeviceID
	w.stopBot()
	before := len(editsOf(alice.snapshot(), answer.ID))
	close(gate) // the agent finishes while no bot renders
	select {
	case <-run.Done():
	case <-time.After(waitLong):
		t.Fatal("run did not end")
	}
	// Everything sent before alice's note has reached her once the note has.
	note := alice.say(room, "", "while the bot is down")
	alice.wait("alice's own note", waitLong, func(evs []*event.Event) bool {
		return slices.ContainsFunc(evs, func(e *event.Event) bool { return e.ID == note })
	})
	if n := len(editsOf(alice.snapshot(), answer.ID)); n != before {
		t.Fatalf("the answer was edited while the bot was down (%d → %d edits)", before, n)
	}

	w.startBot(encrypted)
	if got := w.bot.Client().DeviceID; got != device {
		t.Errorf("the restarted bot is device %s, want the kept %s", got, device)
	}
	evs = alice.wait("the answer's end after the restart", waitLong, func(evs []*event.Event) bool {
		c := current(evs, answer)
		return strings.Contains(c.Body, "Part four.") && strings.Contains(c.Body, "Done")
	})
	if posts := botPosts(evs, bot, room, root); len(posts) != 1 {
		t.Fatalf("bot posted %d messages in the thread, want the one answer:\n%s", len(posts), dump(evs))
	}
	if n := len(editsOf(evs, answer.ID)); n <= before {
		t.Fatalf("no edit after the restart (%d edits)", n)
	}

	// The restarted bot reads the thread (with the keys it kept, when
	// encrypted) and answers a follow-up in a new message.
	w.prov.add(script{before: []string{"Five."}}.turn)
	alice.say(room, root, "and five?", bot)
	evs = alice.wait("the follow-up answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Five.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	if posts := botPosts(evs, bot, room, root); len(posts) != 2 {
		t.Fatalf("bot posted %d messages in the thread, want 2:\n%s", len(posts), dump(evs))
	}
}

func TestRestartMidRun(t *testing.T) {
	restartFlow(t, false)
}

// TestEncryptedMessageWithoutEncryption: a bot without encryption answers an
// encrypted message with a notice saying why it did not act.
func TestEncryptedMessageWithoutEncryption(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(false)
	alice := w.human(w.alice, false)
	bob := w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bogus := map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "AwgAEnAcJ8…", "sender_key": "x", "session_id": "y", "device_id": "ALIDEV"}
	resp, err := alice.cli.SendMessageEvent(t.Context(), room, event.EventEncrypted, bogus)
	if err != nil {
		t.Fatal(err)
	}
	evs := alice.wait("the notice", waitLong, func(evs []*event.Event) bool {
		return slices.ContainsFunc(evs, func(e *event.Event) bool {
			c := msgContent(e)
			return c != nil && e.Sender == w.botUser.ID && c.RelatesTo.GetReplyTo() == resp.EventID
		})
	})
	for _, e := range evs {
		if c := msgContent(e); c != nil && e.Sender == w.botUser.ID {
			if !strings.Contains(c.Body, "could not decrypt") || !strings.Contains(c.Body, "without end-to-end encryption") {
				t.Errorf("notice %q", c.Body)
			}
		}
	}
}

// TestInviteFromStranger: invites from users who may not use the bot are
// declined; allowed users' invites are joined (every other test).
func TestInviteFromStranger(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(false)
	stranger := w.hs.Register(t, "stranger")
	sc := w.hs.Login(t, stranger, "STRDEV")
	resp, err := sc.CreateRoom(t.Context(), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{w.botUser.ID}})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitLong)
	for {
		var m event.MemberEventContent
		err := sc.StateEvent(t.Context(), resp.RoomID, event.StateMember, string(w.botUser.ID), &m)
		if err == nil && m.Membership == event.MembershipLeave {
			return
		}
		if err == nil && m.Membership == event.MembershipJoin {
			t.Fatal("the bot joined a stranger's room")
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bot's membership is still %q (%v)", m.Membership, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// questionCard returns the bot's post in the thread that carries an answer
// button (a question card).
func questionCard(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID) *event.Event {
	for _, p := range botPosts(evs, bot, room, thread) {
		if bs, ok := p.Content.Raw["org.threadline.buttons"].([]any); ok && strings.Contains(jsonString(bs), chatops.ButtonAnswer) {
			return p
		}
	}
	return nil
}

// TestAnswersByReply: cards are answered by replying in the thread: "deny"
// declines an approval, a number picks a question's option, free text
// answers a question that allows another answer (AllowOther) and is refused,
// with a notice naming the options, by one that does not; a reply from
// someone who may not approve gets a notice.
func TestAnswersByReply(t *testing.T) {
	w := newWorld(t, "postgres")
	w.startBot(false)
	alice := w.human(w.alice, false)
	bob := w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bot := w.botUser.ID

	// An approval denied by a reply.
	w.prov.add(script{approval: true, after: []string{"Skipped."}}.turn)
	root := alice.say(room, "", "!threadline clean up")
	alice.wait("the approval card", waitLong, func(evs []*event.Event) bool { return cardPost(evs, bot, room, root) != nil })
	bob.say(room, root, "approve")
	alice.wait("the refusal to bob", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root, "not allowed to answer") != nil
	})
	alice.say(room, root, "deny")
	evs := alice.wait("the declined card", waitLong, func(evs []*event.Event) bool {
		c := cardPost(evs, bot, room, root)
		return c != nil && strings.Contains(current(evs, c).Body, "Declined")
	})
	alice.wait("the end of the turn", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Skipped.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	_ = evs

	// A question answered with an option's number, in a new thread.
	w.prov.add(script{question: true}.turn)
	root2 := alice.say(room, "", w.botUser.Name+": pick a color", bot)
	evs = alice.wait("the question card", waitLong, func(evs []*event.Event) bool { return questionCard(evs, bot, room, root2) != nil })
	q := questionCard(evs, bot, room, root2)
	if body := msgContent(q).Body; !strings.Contains(body, "2. green") || !strings.HasSuffix(body, "with an option's number.") || strings.Contains(body, "free text") {
		t.Errorf("question card without AllowOther %q", body)
	}
	// Free text to it is no answer: a notice names the options.
	alice.say(room, root2, "Teal, please")
	alice.wait("the refusal of the free text", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, bot, room, root2, "takes only one of its options (1. red · 2. green · 3. blue)") != nil
	})
	alice.say(room, root2, "2")
	alice.wait("the answer using green", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root2, "You chose green.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})

	if postWith(alice.snapshot(), bot, room, root2, "You chose Teal") != nil {
		t.Error("free text answered a question without AllowOther")
	}

	// A question that allows another answer, answered with free text.
	w.prov.add(script{question: true, allowOther: true}.turn)
	alice.say(room, root2, "again", bot)
	alice.wait("the second question card", waitLong, func(evs []*event.Event) bool {
		n := 0
		for _, p := range botPosts(evs, bot, room, root2) {
			if bs, ok := p.Content.Raw["org.threadline.buttons"].([]any); ok && strings.Contains(jsonString(bs), chatops.ButtonAnswer) {
				n++
			}
		}
		return n == 2
	})
	var open *event.Event
	for _, p := range botPosts(alice.snapshot(), bot, room, root2) {
		if bs, ok := p.Content.Raw["org.threadline.buttons"].([]any); ok && strings.Contains(jsonString(bs), chatops.ButtonAnswer) {
			open = p
		}
	}
	if body := msgContent(open).Body; !strings.HasSuffix(body, "with your own answer (free text is accepted).") {
		t.Errorf("question card with AllowOther %q", body)
	}
	alice.say(room, root2, "Teal, please")
	alice.wait("the answer using the free text", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root2, "You chose Teal, please.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
}

// TestThreadCommands: "!threadline <command>" and a mention with a command run
// chatops commands in the thread.
func TestThreadCommands(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(false)
	alice := w.human(w.alice, false)
	bob := w.human(w.bob, false)
	room := w.room(alice, bob, false)
	root := alice.say(room, "", "!threadline help")
	alice.wait("the help", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, w.botUser.ID, room, root, "Commands") != nil
	})
	w.prov.add(script{before: []string{"Hi."}}.turn)
	alice.say(room, root, "hello", w.botUser.ID)
	alice.wait("the answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, w.botUser.ID, room, root, "Hi.")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	alice.say(room, root, "!threadline status")
	alice.wait("the status", waitLong, func(evs []*event.Event) bool {
		return postWith(evs, w.botUser.ID, room, root, "agent fake") != nil
	})
}

// TestStopByReaction: ⏹ on the running answer stops the turn; the answer
// says so.
func TestStopByReaction(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.startBot(false)
	alice := w.human(w.alice, false)
	bob := w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bot := w.botUser.ID
	never := make(chan struct{})
	w.prov.add(script{before: []string{"Working on it. "}, after: []string{"a", "never"}, gate: never, pause: 50 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": take your time", bot)
	evs := alice.wait("the running answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Working on it.")
		return p != nil && strings.Contains(current(evs, p).Body, matrix.KeyStop)
	})
	answer := postWith(evs, bot, room, root, "Working on it.")
	alice.react(room, answer.ID, "⏹")
	alice.wait("the stopped answer", waitLong, func(evs []*event.Event) bool {
		return strings.Contains(current(evs, answer).Body, "Stopped")
	})
	if _, ok := w.svc.Active(w.binding(room, root).ChatID); ok {
		t.Error("the run is still active")
	}
}
