// polls.go: a question card's options also as a native Matrix poll (MSC3381,
// in the org.matrix.msc3381.* event types mautrix defines and Element sends;
// a response in the stable m.poll.response form is accepted too). The poll
// follows its card in the thread and names it (cardField); a vote presses the
// card's option button, so it reaches the exact pending request like a
// reaction or a reply, and only approvers' votes count. When the card is
// answered, however, the poll is ended (poll.end).

package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// The poll event types and fields.
var (
	// EventPollResponseStable is the stable (Matrix 1.7) poll response type,
	// which mautrix does not define; its answers are in "m.selections".
	EventPollResponseStable = event.Type{Type: "m.poll.response", Class: event.MessageEventType}
)

const (
	pollStartKey    = "org.matrix.msc3381.poll.start"
	pollResponseKey = "org.matrix.msc3381.poll.response"
	pollEndKey      = "org.matrix.msc3381.poll.end"
	pollKind        = "org.matrix.msc3381.poll.disclosed"
	textKey         = "org.matrix.msc1767.text"
	// cardField names, in a poll the bot started, the card it stands for.
	cardField = "org.threadline.card"
)

// ErrNoPoll is returned for an event that is not one of the bot's polls.
var ErrNoPoll = errors.New("matrix: not a poll of this bot")

// pollBook remembers the bot's polls: card → poll and poll → card, and the
// polls of others that votes came for (so each is fetched once).
type pollBook struct {
	mu     sync.Mutex
	byCard map[id.EventID]id.EventID
	byPoll map[id.EventID]id.EventID
	ended  map[id.EventID]bool
	others map[id.EventID]bool
}

func newPollBook() *pollBook {
	return &pollBook{byCard: map[id.EventID]id.EventID{}, byPoll: map[id.EventID]id.EventID{},
		ended: map[id.EventID]bool{}, others: map[id.EventID]bool{}}
}

// other records that poll is not one of the bot's; it reports whether that
// was known already.
func (pb *pollBook) other(poll id.EventID, mark bool) bool {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	known := pb.others[poll]
	if mark {
		pb.others[poll] = true
	}
	return known
}

func (pb *pollBook) put(card, poll id.EventID) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	pb.byCard[card], pb.byPoll[poll] = poll, card
}

func (pb *pollBook) pollOf(card id.EventID) (id.EventID, bool) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	p, ok := pb.byCard[card]
	return p, ok
}

func (pb *pollBook) cardOf(poll id.EventID) (id.EventID, bool) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	c, ok := pb.byPoll[poll]
	return c, ok
}

// end marks the poll ended and reports whether it was open.
func (pb *pollBook) end(poll id.EventID) bool {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	if pb.ended[poll] {
		return false
	}
	pb.ended[poll] = true
	return true
}

// pollOption is one answer of a poll: the card's option button and its label.
type pollOption struct{ button, label string }

// pollOptions are the view's option buttons, in order; none for a view that
// is not a question with options.
func pollOptions(v chatops.View) []pollOption {
	var out []pollOption
	for _, b := range v.Buttons {
		if strings.HasPrefix(b.ID, chatops.ButtonOptionPrefix) {
			label := b.Label
			if label == "" {
				label = "Option " + itoa(optionIndex(b.ID)+1)
			}
			out = append(out, pollOption{button: b.ID, label: label})
		}
	}
	return out
}

// pollQuestion is the question a poll asks: the card's line just above its
// first option ("**Header** Which color?"), else the view's fallback.
func pollQuestion(v chatops.View) string {
	lines := strings.Split(v.Body, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "1. ") {
			q := strings.TrimSpace(strings.ReplaceAll(lines[i-1], "**", ""))
			if q != "" {
				return clipText(q, 300)
			}
			break
		}
	}
	if q := strings.TrimSpace(v.Fallback); q != "" {
		return clipText(q, 300)
	}
	return "The agent has a question"
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n-len("…"), 0)
	for n > 0 && !utf8RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// pollContent is the poll.start of a card's options: the poll itself, a text
// fallback for clients without polls, the thread (in relation rt) and the
// card it stands for.
func pollContent(v chatops.View, thread id.EventID, rt event.RelationType, card id.EventID) map[string]any {
	q := pollQuestion(v)
	opts := pollOptions(v)
	answers := make([]map[string]any, 0, len(opts))
	fallback := []string{q}
	for i, o := range opts {
		answers = append(answers, map[string]any{"id": o.button, textKey: o.label})
		fallback = append(fallback, fmt.Sprintf("%d. %s", i+1, o.label))
	}
	c := map[string]any{
		pollStartKey: map[string]any{
			"kind":           pollKind,
			"max_selections": 1,
			"question":       map[string]any{textKey: q},
			"answers":        answers,
		},
		textKey:   strings.Join(fallback, "\n"),
		cardField: string(card),
	}
	if thread != "" {
		c["m.relates_to"] = setThread(&event.RelatesTo{}, thread, thread, rt)
	}
	return c
}

// txnFor is the transaction id of a send that must happen once: the
// homeserver answers a repeated one with the event it already made.
func txnFor(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "tl-" + hex.EncodeToString(sum[:12])
}

// startPoll offers the card's options as a poll in the thread. A failure is
// logged: the card's reactions and replies still answer it.
func (b *Bot) startPoll(ctx context.Context, room id.RoomID, p chatops.Place, card id.EventID, v chatops.View) {
	if len(pollOptions(v)) == 0 {
		return
	}
	var extra []mautrix.ReqSendEvent
	if v.Key != "" {
		extra = append(extra, mautrix.ReqSendEvent{TransactionID: txnFor(v.Key + "/poll")})
	}
	resp, err := b.cli.SendMessageEvent(ctx, room, event.EventUnstablePollStart, pollContent(v, id.EventID(p.Thread), b.threads.of(room, id.EventID(p.Thread)), card), extra...)
	if err != nil {
		b.log.WarnContext(ctx, "start a poll for a question", logkey.RoomID, room, logkey.EventID, card, "err", err)
		return
	}
	b.polls.put(card, resp.EventID)
}

// endPoll ends the poll of card, once, now that the card no longer asks. The
// poll is known from startPoll or, after a restart, found among the thread's
// events.
func (b *Bot) endPoll(ctx context.Context, room id.RoomID, p chatops.Place, card id.EventID, outcome string) {
	poll, ok := b.polls.pollOf(card)
	if !ok {
		var err error
		if poll, err = b.findPoll(ctx, room, id.EventID(p.Thread), card); err != nil {
			b.log.InfoContext(ctx, "no poll found for an answered question", logkey.RoomID, room, logkey.EventID, card, "err", err)
			return
		}
		b.polls.put(card, poll)
	}
	if !b.polls.end(poll) {
		return
	}
	text := "The poll has ended."
	if outcome != "" {
		text += " " + outcome
	}
	c := map[string]any{
		"m.relates_to": &event.RelatesTo{Type: event.RelReference, EventID: poll},
		pollEndKey:     map[string]any{},
		textKey:        text,
	}
	if _, err := b.cli.SendMessageEvent(ctx, room, event.EventUnstablePollEnd, c, mautrix.ReqSendEvent{TransactionID: txnFor("end/" + string(poll))}); err != nil {
		b.log.WarnContext(ctx, "end a poll", logkey.RoomID, room, logkey.EventID, poll, "err", err)
	}
}

// findPoll looks for the bot's poll of card among the thread's events.
func (b *Bot) findPoll(ctx context.Context, room id.RoomID, thread, card id.EventID) (id.EventID, error) {
	if thread == "" {
		return "", ErrNoPoll
	}
	rels, _, err := b.threadRelations(ctx, room, thread, 100, 1)
	if err != nil {
		return "", err
	}
	for _, e := range rels {
		if e.Sender != b.me {
			continue
		}
		dec, err := b.decrypted(ctx, e)
		if err != nil || dec.Type != event.EventUnstablePollStart {
			continue
		}
		if c, _ := dec.Content.Raw[cardField].(string); c == string(card) {
			return e.ID, nil
		}
	}
	return "", fmt.Errorf("%w: none for %s in the thread's latest 100 events", ErrNoPoll, card)
}

// pollCard is the card a poll of the bot stands for.
func (b *Bot) pollCard(ctx context.Context, room id.RoomID, poll id.EventID) (id.EventID, error) {
	if c, ok := b.polls.cardOf(poll); ok {
		return c, nil
	}
	if b.polls.other(poll, false) {
		return "", fmt.Errorf("%w: %s", ErrNoPoll, poll)
	}
	e, err := b.fetch(ctx, room, poll)
	if err != nil {
		return "", err
	}
	c, _ := e.Content.Raw[cardField].(string)
	if e.Sender != b.me || e.Type != event.EventUnstablePollStart || c == "" {
		b.polls.other(poll, true)
		return "", fmt.Errorf("%w: %s", ErrNoPoll, poll)
	}
	b.polls.put(id.EventID(c), poll)
	return id.EventID(c), nil
}

// pollVote reads a poll response: the poll it answers and the answer ids
// (unstable org.matrix.msc3381.poll.response.answers, or stable
// m.selections).
func pollVote(raw map[string]any) (id.EventID, []string) {
	rel := relatesTo(raw)
	if rel == nil || rel.Type != event.RelReference || rel.EventID == "" {
		return "", nil
	}
	var list []any
	if r, ok := raw[pollResponseKey].(map[string]any); ok {
		list, _ = r["answers"].([]any)
	} else {
		list, _ = raw["m.selections"].([]any)
	}
	var out []string
	for _, x := range list {
		if s, ok := x.(string); ok && s != "" {
			out = append(out, s)
		}
	}
	return rel.EventID, out
}

// onPollResponse presses the option button a vote in one of the bot's polls
// stands for. Votes of users who may not answer are refused with a notice; a
// withdrawn vote (no answers) does nothing.
func (b *Bot) onPollResponse(ctx context.Context, evt *event.Event) {
	if evt.Sender == b.me {
		return
	}
	poll, answers := pollVote(evt.Content.Raw)
	if poll == "" || len(answers) == 0 {
		return
	}
	cardID, err := b.pollCard(ctx, evt.RoomID, poll)
	if err != nil {
		if !errors.Is(err, ErrNoPoll) {
			b.log.InfoContext(ctx, "vote in an unknown poll", logkey.EventID, evt.ID, "err", err)
		}
		return
	}
	if !b.firstSeen(ctx, evt) {
		return
	}
	c, err := b.lookupCard(ctx, evt.RoomID, cardID)
	if err != nil {
		b.log.InfoContext(ctx, "vote for an unknown card", logkey.EventID, evt.ID, "card", cardID, "err", err)
		return
	}
	u := user(evt.Sender)
	if !b.desk.MayAnswer(u, c.place) {
		b.log.InfoContext(ctx, "refused a vote from a user who may not answer", logkey.RoomID, evt.RoomID, "sender", evt.Sender)
		if err := b.Ephemeral(ctx, c.place, u, "Your vote does not count: you are not allowed to answer the agent's requests here; ask an approver."); err != nil {
			b.log.WarnContext(ctx, "refuse a vote", "err", err)
		}
		return
	}
	bt, ok := c.button(answers[0])
	if !ok || !strings.HasPrefix(bt.ID, chatops.ButtonOptionPrefix) {
		if !c.open() {
			_ = b.Ephemeral(ctx, c.place, u, "That request is no longer waiting for an answer.")
		}
		return
	}
	b.click(ctx, c.place, u, bt)
}
