// cards.go: the buttons of the bot's messages (approval and question cards,
// the Stop of a running answer). Matrix has no buttons: people react or reply,
// and the bot maps that back to the button it stands for. The buttons travel
// in the message content (buttonsField), so after a restart they are read back
// from the homeserver; a cache spares the round trip.

package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// buttonsField carries a view's buttons in the bot's message content (and in
// m.new_content of its edits).
const buttonsField = "org.threadline.buttons"

// ErrNoCard is returned when an event is not a bot message with buttons.
var ErrNoCard = errors.New("matrix: not a message with buttons")

// card is what the bot knows of one of its messages with buttons.
type card struct {
	place   chatops.Place
	buttons []chatops.Button
	at      time.Time
}

// open reports whether the card still asks for an answer (a running answer's
// Stop alone is not a card).
func (c *card) open() bool {
	return slices.ContainsFunc(c.buttons, func(b chatops.Button) bool { return b.ID != chatops.ButtonStop })
}

// asks reports whether the card asks a question or an approval: it has an
// Answer, option, approval or decline button. A queued prompt's "Run now"
// and a running answer's Stop do not ask anything a reply could answer.
func (c *card) asks() bool {
	return slices.ContainsFunc(c.buttons, func(b chatops.Button) bool {
		switch b.ID {
		case chatops.ButtonAnswer, chatops.ButtonApprove, chatops.ButtonApproveSession, chatops.ButtonDecline, chatops.ButtonCancel:
			return true
		}
		return strings.HasPrefix(b.ID, chatops.ButtonOptionPrefix)
	})
}

func (c *card) button(id string) (chatops.Button, bool) {
	for _, b := range c.buttons {
		if b.ID == id {
			return b, true
		}
	}
	return chatops.Button{}, false
}

// cardBook caches the bot's messages with buttons by event id.
type cardBook struct {
	mu      sync.Mutex
	byEvent map[id.EventID]*card
	// read are the threads whose cards were read back from the homeserver.
	read map[chatops.Place]bool
}

func newCardBook() *cardBook {
	return &cardBook{byEvent: map[id.EventID]*card{}, read: map[chatops.Place]bool{}}
}

// toRead reports whether the thread's cards are to be read back from the
// homeserver: the first time it is asked for a thread of which no card is
// known.
func (cb *cardBook) toRead(p chatops.Place) bool {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.read[p] {
		return false
	}
	cb.read[p] = true
	for _, c := range cb.byEvent {
		if c.place == p {
			return false
		}
	}
	return true
}

const cardTTL = 7 * 24 * time.Hour

func (cb *cardBook) put(evt id.EventID, p chatops.Place, buttons []chatops.Button) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	now := time.Now()
	for k, c := range cb.byEvent {
		if now.Sub(c.at) > cardTTL {
			delete(cb.byEvent, k)
		}
	}
	cb.byEvent[evt] = &card{place: p, buttons: slices.Clone(buttons), at: now}
}

func (cb *cardBook) get(evt id.EventID) (*card, bool) {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	c, ok := cb.byEvent[evt]
	return c, ok
}

// openIn returns the open cards of the thread, newest first.
func (cb *cardBook) openIn(p chatops.Place) []*card {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	var out []*card
	for _, c := range cb.byEvent {
		if c.place == p && c.open() {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b *card) int { return b.at.Compare(a.at) })
	return out
}

// asking returns the open cards of the thread that ask a question or an
// approval (card.asks), newest first.
func (cb *cardBook) asking(p chatops.Place) []*card {
	return slices.DeleteFunc(cb.openIn(p), func(c *card) bool { return !c.asks() })
}

// withButtons returns the content as a map with the buttons added (to
// m.new_content too, for an edit).
func withButtons(c *event.MessageEventContent, buttons []chatops.Button) (map[string]any, error) {
	raw, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	bs := make([]map[string]string, 0, len(buttons))
	for _, b := range buttons {
		bs = append(bs, map[string]string{"id": b.ID, "value": b.Value})
	}
	m[buttonsField] = bs
	if nc, ok := m["m.new_content"].(map[string]any); ok {
		nc[buttonsField] = bs
	}
	return m, nil
}

// buttonsOf reads the buttons of raw message content; ok is false when it
// has the field absent.
func buttonsOf(raw map[string]any) (out []chatops.Button, ok bool) {
	bs, ok := raw[buttonsField].([]any)
	if !ok {
		return nil, false
	}
	for _, x := range bs {
		m, _ := x.(map[string]any)
		idv, _ := m["id"].(string)
		val, _ := m["value"].(string)
		if idv != "" {
			out = append(out, chatops.Button{ID: idv, Value: val})
		}
	}
	return out, true
}

// lookupCard returns the bot message evt of room with its current buttons:
// from the cache, else from the homeserver (the message and its latest edit).
// Only the bot's own messages count.
func (b *Bot) lookupCard(ctx context.Context, room id.RoomID, evt id.EventID) (*card, error) {
	if c, ok := b.cards.get(evt); ok {
		return c, nil
	}
	orig, err := b.fetch(ctx, room, evt)
	if err != nil {
		return nil, err
	}
	if orig.Sender != b.me {
		return nil, fmt.Errorf("%w: %s was sent by %s", ErrNoCard, evt, orig.Sender)
	}
	thread := evt
	if root, _ := threadParent(relatesTo(orig.Content.Raw)); root != "" {
		thread = root
	}
	buttons, ok := buttonsOf(orig.Content.Raw)
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoCard, evt)
	}
	// The latest edit by the bot carries the current buttons.
	if edits, err := b.cli.GetRelations(ctx, room, evt, &mautrix.ReqGetRelations{RelationType: event.RelReplace, Dir: mautrix.DirectionBackward, Limit: 50}); err == nil {
		var newest *event.Event
		for _, e := range edits.Chunk {
			if e.Sender != b.me {
				continue
			}
			if newest == nil || e.Timestamp > newest.Timestamp {
				newest = e
			}
		}
		if newest != nil {
			if dec, err := b.decrypted(ctx, newest); err == nil {
				if nc, ok := dec.Content.Raw["m.new_content"].(map[string]any); ok {
					if bs, ok := buttonsOf(nc); ok {
						buttons = bs
					} else {
						buttons = nil
					}
				}
			}
		}
	}
	c := &card{place: b.place(room, thread), buttons: buttons, at: time.UnixMilli(orig.Timestamp)}
	b.cards.put(evt, c.place, c.buttons)
	return c, nil
}

// readCards reads back the open cards of a thread the bot knows no card of
// (it posted them before a restart): its messages with buttons among the
// thread's latest 50 events, each with its latest edit. Once per thread.
func (b *Bot) readCards(ctx context.Context, room id.RoomID, p chatops.Place) {
	if p.Thread == "" || !b.cards.toRead(p) {
		return
	}
	rels, _, err := b.threadRelations(ctx, room, id.EventID(p.Thread), 50, 1)
	if err != nil {
		b.log.InfoContext(ctx, "read the cards of a thread", logkey.RoomID, room, logkey.ThreadID, p.Thread, "err", err)
		return
	}
	for i := len(rels) - 1; i >= 0; i-- { // oldest first: the newest card ends up newest
		e := rels[i]
		if e.Sender != b.me {
			continue
		}
		e.RoomID = room
		dec, err := b.decrypted(ctx, e)
		if err != nil || dec.Type != event.EventMessage {
			continue
		}
		if bs, ok := buttonsOf(dec.Content.Raw); !ok || !(&card{buttons: bs}).open() {
			continue
		}
		if _, err := b.lookupCard(ctx, room, e.ID); err != nil {
			b.log.InfoContext(ctx, "read a card of a thread", logkey.RoomID, room, logkey.EventID, e.ID, "err", err)
		}
	}
}

// fetch gets an event, decrypted when it is encrypted.
func (b *Bot) fetch(ctx context.Context, room id.RoomID, evt id.EventID) (*event.Event, error) {
	e, err := b.cli.GetEvent(ctx, room, evt)
	if err != nil {
		return nil, err
	}
	e.RoomID = room
	return b.decrypted(ctx, e)
}

func (b *Bot) decrypted(ctx context.Context, e *event.Event) (*event.Event, error) {
	if e.Type != event.EventEncrypted {
		return e, nil
	}
	if b.crypto == nil {
		return nil, ErrEncryptionUnavailable
	}
	if err := e.Content.ParseRaw(e.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		return nil, err
	}
	return b.crypto.Decrypt(ctx, e)
}

func relatesTo(raw map[string]any) *event.RelatesTo {
	r, ok := raw["m.relates_to"]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(r)
	var rel event.RelatesTo
	if json.Unmarshal(b, &rel) != nil {
		return nil
	}
	return &rel
}

// answerWords maps a reply to the approval button it stands for. Approving
// takes an explicit word ("approve", "approve for session") or ✅: casual
// replies ("ok", "yes", "y", "allow", "sure") are not decisions and leave
// the card pending.
var answerWords = map[string]string{
	"approve": chatops.ButtonApprove, "approved": chatops.ButtonApprove, KeyApprove: chatops.ButtonApprove,
	"approve session": chatops.ButtonApproveSession, "approve for session": chatops.ButtonApproveSession, "approve for the session": chatops.ButtonApproveSession,
	"deny": chatops.ButtonDecline, "denied": chatops.ButtonDecline, "decline": chatops.ButtonDecline, "no": chatops.ButtonDecline,
	"n": chatops.ButtonDecline, "reject": chatops.ButtonDecline, KeyDecline: chatops.ButtonDecline,
	"stop": chatops.ButtonCancel, "cancel": chatops.ButtonCancel,
}

// replyAnswer is what a reply in a thread means for an open card: a button
// press (button set) or a free-text answer (text set); ok is false when the
// reply is not an answer to it.
type replyAnswer struct {
	button chatops.Button
	text   string
	qid    string
	// only is set for free text to a question that takes only its options
	// (onlyOptions): the options, to name them in the refusal.
	only []string
}

// parseReply reads a reply to card c. only are the options of c's question
// when it takes nothing else (onlyOptions; nil when free text answers it).
func parseReply(c *card, text string, only []string) (replyAnswer, bool) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	t = strings.Join(strings.Fields(t), " ")
	if t == "" {
		return replyAnswer{}, false
	}
	_, answer := c.button(chatops.ButtonAnswer)
	free := answer && len(only) == 0
	if options := len(pollOptions(chatops.View{Buttons: c.buttons})); free || options > 0 {
		if n, err := strconv.Atoi(t); err == nil {
			if bt, ok := c.button(chatops.ButtonOptionPrefix + strconv.Itoa(n-1)); ok {
				return replyAnswer{button: bt}, true
			}
		}
		switch t {
		case "deny", "decline", "skip", KeyDecline:
			if bt, ok := c.button(chatops.ButtonDecline); ok {
				return replyAnswer{button: bt}, true
			}
		}
		if !free {
			if len(only) == 0 {
				only = optionLabels(c.buttons)
			}
			return replyAnswer{only: only}, true
		}
		return replyAnswer{text: strings.TrimSpace(text), qid: questionID(c)}, true
	}
	name, ok := answerWords[t]
	if !ok {
		return replyAnswer{}, false
	}
	bt, ok := c.button(name)
	if !ok {
		return replyAnswer{}, false
	}
	return replyAnswer{button: bt}, true
}

// questionSource is the part of the Desk that returns the questions of a
// pending interaction (*chatops.Desk does).
type questionSource interface {
	Questions(ctx context.Context, ref chatops.Ref) ([]agent.Question, error)
}

// onlyOptions returns the options of the question a card with these buttons
// asks when that question takes nothing else: a card with option buttons and
// no Answer button, or one whose question, read from the desk by the Answer
// button's ref, is a single question with options that does not allow
// another answer (agent.Question.AllowOther false). It is nil when free
// text answers the card, or when the question cannot be read (not pending
// any more: the desk then judges the answer). render keeps the Answer
// button on every question (a poll's card is found by it).
func (b *Bot) onlyOptions(ctx context.Context, buttons []chatops.Button) []string {
	labels := optionLabels(buttons)
	if len(labels) == 0 {
		return nil
	}
	if _, ok := answerButton(buttons); !ok {
		return labels
	}
	q, ok := b.cardQuestions(ctx, buttons)
	if !ok || len(q) != 1 || len(q[0].Options) == 0 || q[0].AllowOther {
		return nil
	}
	return q[0].Options
}

// secretQuestion reports whether a card with these buttons asks a secret
// (agent.Question.Secret), read from the desk by the Answer button's ref. It
// is false when the question cannot be read.
func (b *Bot) secretQuestion(ctx context.Context, buttons []chatops.Button) bool {
	q, _ := b.cardQuestions(ctx, buttons)
	return slices.ContainsFunc(q, func(q agent.Question) bool { return q.Secret })
}

// answerButton is the card's Answer button, if it has one.
func answerButton(buttons []chatops.Button) (chatops.Button, bool) {
	i := slices.IndexFunc(buttons, func(bt chatops.Button) bool { return bt.ID == chatops.ButtonAnswer })
	if i < 0 {
		return chatops.Button{}, false
	}
	return buttons[i], true
}

// cardQuestions reads from the desk the questions of the interaction a card
// with these buttons asks, by its Answer button's ref; false when the card
// has none or the questions cannot be read (not pending any more).
func (b *Bot) cardQuestions(ctx context.Context, buttons []chatops.Button) ([]agent.Question, bool) {
	answer, ok := answerButton(buttons)
	if !ok {
		return nil, false
	}
	qs, ok := b.desk.(questionSource)
	if !ok {
		return nil, false
	}
	ref, err := chatops.DecodeRef(answer.Value)
	if err != nil {
		return nil, false
	}
	q, err := qs.Questions(ctx, ref)
	if err != nil {
		return nil, false
	}
	return q, true
}

// optionLabels are the labels of the option buttons, in order.
func optionLabels(buttons []chatops.Button) []string {
	var out []string
	for _, bt := range buttons {
		if strings.HasPrefix(bt.ID, chatops.ButtonOptionPrefix) {
			out = append(out, bt.Label)
		}
	}
	return out
}

// onlyOptionsNotice refuses free text to a question that takes only its
// options, naming them.
func onlyOptionsNotice(options []string) string {
	named := make([]string, len(options))
	for i, o := range options {
		o = strings.Join(strings.Fields(o), " ")
		if r := []rune(o); len(r) > 80 {
			o = string(r[:79]) + "…"
		}
		named[i] = fmt.Sprintf("%d. %s", i+1, o)
	}
	return fmt.Sprintf("This question takes only one of its options (%s): reply with its number, vote in the poll or react.",
		strings.Join(named, " · "))
}

// questionID finds the id of the card's question from its buttons' refs.
func questionID(c *card) string {
	for _, b := range c.buttons {
		if r, err := chatops.DecodeRef(b.Value); err == nil && r.QuestionID != "" {
			return r.QuestionID
		}
	}
	return ""
}
