// inbound.go: what people do in the bot's rooms, turned into chatops calls:
// invites (joined when an allowed user invites), messages (a mention, the
// display name or "!threadline" addresses the bot; a Matrix thread is a chat,
// and a mention outside a thread starts a thread on that message), replies
// that answer an open card, reactions that press a card's buttons, and
// encrypted events the bot cannot read.

package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// CommandPrefix addresses the bot without a mention: "!threadline stop".
const CommandPrefix = "!threadline"

// firstSeen reports whether the event is new (not a replay after a restart).
func (b *Bot) firstSeen(ctx context.Context, evt *event.Event) bool {
	if b.seen == nil {
		return true
	}
	ok, err := b.seen.FirstSeen(ctx, Platform, string(evt.ID))
	if err != nil {
		b.log.WarnContext(ctx, "record a seen event", logkey.EventID, evt.ID, "err", err)
		return true
	}
	return ok
}

// onMember joins rooms an allowed user invites the bot to and declines the
// other invites.
func (b *Bot) onMember(ctx context.Context, evt *event.Event) {
	if evt.GetStateKey() != string(b.me) {
		return
	}
	m := evt.Content.AsMember()
	if m.Membership != event.MembershipInvite {
		return
	}
	room := evt.RoomID
	if b.cli.StateStore.IsInRoom(ctx, room, b.me) {
		return
	}
	p := b.place(room, "")
	if !b.desk.Policy().Allowed(user(evt.Sender), p, chatops.ActRun) {
		b.log.InfoContext(ctx, "declining an invite from a user who may not use the bot", logkey.RoomID, room, "inviter", evt.Sender)
		if _, err := b.cli.LeaveRoom(ctx, room, &mautrix.ReqLeave{Reason: "only allowed users may invite this bot"}); err != nil {
			b.log.WarnContext(ctx, "decline invite", logkey.RoomID, room, "err", err)
		}
		return
	}
	if _, err := b.cli.JoinRoomByID(ctx, room); err != nil {
		b.log.WarnContext(ctx, "join room", logkey.RoomID, room, "err", err)
		return
	}
	b.log.InfoContext(ctx, "joined room", logkey.RoomID, room, "inviter", evt.Sender)
}

// addressed reports whether the message is for the bot and returns its text
// without the bot's mention or command prefix.
func (b *Bot) addressed(c *event.MessageEventContent) (bool, string) {
	text := strings.TrimSpace(c.Body)
	mentioned := c.Mentions != nil && c.Mentions.Has(b.me)
	if rest, ok := cutPrefixFold(text, CommandPrefix); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\n') {
		return true, strings.TrimSpace(rest)
	}
	for _, name := range []string{string(b.me), b.displayName, "@" + b.me.Localpart()} {
		if name == "" {
			continue
		}
		if rest, ok := cutPrefixFold(text, name); ok && (rest == "" || strings.ContainsRune(" :,\n", rune(rest[0]))) {
			return true, strings.TrimSpace(strings.TrimLeft(rest, ":, \n"))
		}
	}
	for _, name := range []string{string(b.me), b.displayName} {
		if name != "" && containsWord(text, name) {
			return true, text
		}
	}
	return mentioned, text
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix) {
		return s[len(prefix):], true
	}
	return s, false
}

func containsWord(text, name string) bool {
	re, err := regexp.Compile(`(?i)(^|[^\pL\pN_@])` + regexp.QuoteMeta(name) + `($|[^\pL\pN_])`)
	return err == nil && re.MatchString(text)
}

// onMessage hands a message to chatops, or to an open card of its thread.
func (b *Bot) onMessage(ctx context.Context, evt *event.Event) {
	if evt.Sender == b.me {
		return
	}
	c := evt.Content.AsMessage()
	if c == nil || c.RelatesTo.GetReplaceID() != "" || c.MsgType == event.MsgNotice || c.MsgType == event.MsgVerificationRequest {
		return // edits, other bots' notices, verification requests
	}
	if !b.firstSeen(ctx, evt) {
		return
	}
	c.RemoveReplyFallback()
	mentioned, text := b.addressed(c)
	// Element writes io.element.thread where the homeserver does not
	// advertise threads: the same thread, answered in the same relation.
	rt := asStableThread(c.RelatesTo)
	thread := c.RelatesTo.GetThreadParent()
	b.threads.note(evt.RoomID, thread, rt)
	if thread != "" && b.answerCard(ctx, evt, b.place(evt.RoomID, thread), text, mentioned) {
		return
	}
	if thread == "" {
		thread = evt.ID
	}
	msg := chatops.Message{
		Place: b.place(evt.RoomID, thread), ID: string(evt.ID), User: user(evt.Sender),
		Sent: originTime(evt.Timestamp), Text: text, Mentioned: mentioned, Direct: b.direct(ctx, evt.RoomID),
	}
	if c.MsgType.IsMedia() {
		if !mentioned && !msg.Direct {
			// A file is a prompt only in a bound thread that takes replies
			// without mentions; chatops decides.
			msg.Text = ""
		}
		// Nothing is fetched for someone who may not use the bot here: the
		// desk refuses the message itself, and fetches (in the thread's
		// actor) only for a message it acts on.
		if b.desk.Policy().Allowed(msg.User, msg.Place, chatops.ActRun) {
			msg.Text = strings.TrimSpace(c.GetCaption())
			noted := msg
			msg.Fetch = func(ctx context.Context) []chatops.File {
				f, err := b.download(ctx, c)
				switch {
				case errors.Is(err, ErrFileTooLarge):
					b.log.InfoContext(ctx, "skipped a large attachment", logkey.EventID, evt.ID, "err", err)
					b.note(ctx, noted, fmt.Sprintf("I skipped the attachment %q: it is larger than %s.", c.GetFileName(), mib(b.cfg.MaxFileBytes)))
				case err != nil:
					b.log.WarnContext(ctx, "download attachment", logkey.EventID, evt.ID, "err", err)
					b.note(ctx, noted, fmt.Sprintf("I could not fetch the attachment %q, so your message runs without it.", c.GetFileName()))
				default:
					return []chatops.File{f}
				}
				return nil
			}
		}
	}
	b.put(ctx, chatops.Inbound{Message: &msg})
}

// put hands an event to the desk.
func (b *Bot) put(ctx context.Context, in chatops.Inbound) {
	if err := b.desk.Put(ctx, in); err != nil {
		b.log.WarnContext(ctx, "could not queue a matrix event", "err", err)
	}
}

// direct reports whether the room is a conversation of the bot and one person.
func (b *Bot) direct(ctx context.Context, room id.RoomID) bool {
	members, err := b.cli.StateStore.GetRoomJoinedOrInvitedMembers(ctx, room)
	return err == nil && len(members) == 2
}

// answerCard treats a reply in a thread with an open card as its answer. It
// reports whether the message was taken as one. The card answered is the
// one the message replies to (m.in_reply_to, not a thread's fallback); else
// the thread's one card that asks a question or an approval (card.asks:
// a queued prompt's "Run now" is no such card). With several of them and no
// reply to one, an answer is not guessed: the sender is asked to reply to
// the card it answers.
func (b *Bot) answerCard(ctx context.Context, evt *event.Event, p chatops.Place, text string, mentioned bool) bool {
	b.readCards(ctx, evt.RoomID, p)
	var rel *event.RelatesTo
	if m := evt.Content.AsMessage(); m != nil {
		rel = m.RelatesTo
	}
	if to := rel.GetNonFallbackReplyTo(); to != "" {
		if c, err := b.lookupCard(ctx, evt.RoomID, to); err == nil && c.place == p {
			if !c.asks() {
				return false // a reply to a settled card (or a Run now): an ordinary message
			}
			if u := user(evt.Sender); !b.desk.MayAnswer(u, p) && b.secretQuestion(ctx, c.buttons) {
				// A reply to a secret question is the secret pasted in the
				// room, whoever sends it: never an ordinary message (as a
				// follow-up prompt it would reach the agent and the log).
				b.refuseSecret(ctx, evt, p, u)
				return true
			}
			return b.answerThis(ctx, evt, p, c, text, mentioned)
		}
	}
	cards := b.cards.asking(p)
	switch len(cards) {
	case 0:
		return false
	case 1:
		return b.answerThis(ctx, evt, p, cards[0], text, mentioned)
	}
	// Several requests wait: answer none of them by guess.
	var first *card
	for _, c := range cards {
		if _, ok := parseReply(c, text, b.onlyOptions(ctx, c.buttons)); ok {
			first = c
			break
		}
	}
	if first == nil {
		return false
	}
	u := user(evt.Sender)
	if !b.desk.MayAnswer(u, p) {
		return b.answerThis(ctx, evt, p, first, text, mentioned) // refused or ordinary, as for one card
	}
	if slices.ContainsFunc(cards, func(c *card) bool { return b.secretQuestion(ctx, c.buttons) }) {
		b.refuseSecret(ctx, evt, p, u)
		return true
	}
	if err := b.Ephemeral(ctx, p, u, fmt.Sprintf("%d requests are waiting in this thread, so I did not take this as an answer: reply to the request you answer (Reply on its message), or react on it.", len(cards))); err != nil {
		b.log.WarnContext(ctx, "ask which card a reply answers", "err", err)
	}
	return true
}

// answerThis treats the message as an answer to card c of thread p.
func (b *Bot) answerThis(ctx context.Context, evt *event.Event, p chatops.Place, c *card, text string, mentioned bool) bool {
	ans, ok := parseReply(c, text, b.onlyOptions(ctx, c.buttons))
	if !ok {
		return false
	}
	u := user(evt.Sender)
	if !b.desk.MayAnswer(u, p) {
		if ans.button.ID == "" && !mentioned {
			return false // free text from someone else: an ordinary message
		}
		if len(ans.only) > 0 {
			return false // neither an answer nor a decision: an ordinary message
		}
		if err := b.Ephemeral(ctx, p, u, "You are not allowed to answer the agent's requests here; ask an approver."); err != nil {
			b.log.WarnContext(ctx, "refuse an answer", "err", err)
		}
		return true
	}
	if ans.button.ID != "" {
		b.click(ctx, p, u, ans.button)
		return true
	}
	if len(ans.only) > 0 {
		if err := b.Ephemeral(ctx, p, u, onlyOptionsNotice(ans.only)); err != nil {
			b.log.WarnContext(ctx, "refuse free text to a question", "err", err)
		}
		return true
	}
	if b.secretQuestion(ctx, c.buttons) {
		b.refuseSecret(ctx, evt, p, u)
		return true
	}
	ref, err := b.answerRef(c)
	if err != nil || ans.qid == "" {
		_ = b.Ephemeral(ctx, p, u, "I cannot tell which question this answers; react with an option instead.")
		return true
	}
	b.put(ctx, chatops.Inbound{Answer: &chatops.Answer{Place: p, User: u, Ref: ref, Answers: map[string]string{ans.qid: ans.text}}})
	return true
}

// refuseSecret refuses a reply in the room to a question that asks a secret,
// from an approver or anyone else: the room's members saw it, so it is not
// passed on; the reply is redacted (best effort: the bot needs the power to
// redact) and the sender told why. The reply's text is never logged.
func (b *Bot) refuseSecret(ctx context.Context, evt *event.Event, p chatops.Place, u chatops.User) {
	why := "this question asks for a secret, and a reply in this room is seen by every member, so I did not pass it on."
	text := "I removed your reply: " + why
	if _, err := b.cli.RedactEvent(ctx, evt.RoomID, evt.ID, mautrix.ReqRedact{Reason: "a secret answered in the room"}); err != nil {
		b.log.WarnContext(ctx, "redact a reply to a secret question", logkey.RoomID, evt.RoomID, logkey.EventID, evt.ID, "err", err)
		text = "I could not remove your reply (delete it yourself, and treat the value as exposed): " + why
	}
	if b.desk.MayAnswer(u, p) {
		text += " Decline the question here (react " + KeyDecline + " or reply \"decline\") and give the agent the secret another way."
	} else {
		text += " Only an approver can answer the agent's requests here."
	}
	if err := b.Ephemeral(ctx, p, u, text); err != nil {
		b.log.WarnContext(ctx, "refuse a reply to a secret question", "err", err)
	}
}

func (b *Bot) answerRef(c *card) (chatops.Ref, error) {
	bt, ok := c.button(chatops.ButtonAnswer)
	if !ok {
		return chatops.Ref{}, ErrNoCard
	}
	return chatops.DecodeRef(bt.Value)
}

func (b *Bot) click(ctx context.Context, p chatops.Place, u chatops.User, bt chatops.Button) {
	ref, err := chatops.DecodeRef(bt.Value)
	if err != nil {
		b.log.WarnContext(ctx, "card button without a ref", "button", bt.ID, "err", err)
		return
	}
	b.put(ctx, chatops.Inbound{Click: &chatops.Click{Place: p, User: u, Button: bt.ID, Ref: ref}})
}

// onReaction presses the button a reaction on one of the bot's messages
// stands for.
func (b *Bot) onReaction(ctx context.Context, evt *event.Event) {
	if evt.Sender == b.me {
		return
	}
	r := evt.Content.AsReaction()
	if r == nil {
		return
	}
	name, ok := reactionButton(r.RelatesTo.GetAnnotationKey())
	if !ok {
		return
	}
	if !b.firstSeen(ctx, evt) {
		return
	}
	c, err := b.lookupCard(ctx, evt.RoomID, r.RelatesTo.GetAnnotationID())
	if err != nil {
		if !errors.Is(err, ErrNoCard) {
			b.log.InfoContext(ctx, "reaction to an unknown message", logkey.EventID, evt.ID, "err", err)
		}
		return
	}
	bt, ok := c.button(name)
	if !ok && name == chatops.ButtonStop {
		bt, ok = c.button(chatops.ButtonCancel) // ⏹ on a card stops the turn
	}
	if !ok {
		if len(c.buttons) == 0 {
			_ = b.Ephemeral(ctx, c.place, user(evt.Sender), "That request is no longer waiting for an answer.")
		}
		return
	}
	b.click(ctx, c.place, user(evt.Sender), bt)
}

// undecryptableCooldown spaces the notices about unreadable messages in one
// room.
const undecryptableCooldown = 20 * time.Second

// notifyUnreadable tells the room that the bot could not read evt.
func (b *Bot) notifyUnreadable(ctx context.Context, evt *event.Event, why string) {
	b.noticeMu.Lock()
	if time.Since(b.noticedAt[evt.RoomID]) < undecryptableCooldown {
		b.noticeMu.Unlock()
		return
	}
	b.noticedAt[evt.RoomID] = time.Now()
	b.noticeMu.Unlock()
	text := fmt.Sprintf("%s: I could not decrypt your message, so I did not act on it. %s", b.Mention(user(evt.Sender).Qualified()), why)
	c := content(chatops.View{Body: text}, []id.UserID{evt.Sender})
	if root, rt := threadParent(relatesTo(evt.Content.Raw)); root != "" {
		setThread(c.GetRelatesTo(), root, evt.ID, rt)
	} else {
		c.GetRelatesTo().SetReplyTo(evt.ID)
	}
	if _, err := b.send(ctx, evt.RoomID, "notice", c); err != nil {
		b.log.WarnContext(ctx, "post an undecryptable notice", logkey.RoomID, evt.RoomID, "err", err)
	}
}

// onEncryptedWithoutCrypto answers encrypted messages when encryption is off.
func (b *Bot) onEncryptedWithoutCrypto(ctx context.Context, evt *event.Event) {
	if evt.Sender == b.me || !b.firstSeen(ctx, evt) {
		return
	}
	b.log.InfoContext(ctx, "encrypted message while encryption is off", logkey.RoomID, evt.RoomID, logkey.EventID, evt.ID)
	b.notifyUnreadable(ctx, evt, "This bot runs without end-to-end encryption (matrix.encryption is off); use an unencrypted room or ask the operator to enable encryption.")
}

// onUndecryptable is the crypto helper's report of an event it could not
// decrypt (no session arrived, or a bad one).
func (b *Bot) onUndecryptable(evt *event.Event, err error) {
	if evt.Sender == b.me {
		return
	}
	b.log.Warn("undecryptable event", logkey.RoomID, evt.RoomID, logkey.EventID, evt.ID, "sender", evt.Sender, "err", err)
	b.wg.Go(func() {
		b.handle(context.Background(), queued{evt: evt, fn: func(ctx context.Context, evt *event.Event) {
			if !b.firstSeen(ctx, evt) {
				return
			}
			b.notifyUnreadable(ctx, evt, "Its keys did not reach my device ("+err.Error()+"). Make sure your client shares room keys with unverified devices, then send it again.")
		}})
	})
}

// ErrFileTooLarge is returned by download for an attachment over
// Config.MaxFileBytes.
var ErrFileTooLarge = errors.New("matrix: attachment too large")

// note tells the sender of a message addressed to the bot, in its thread,
// about its attachment.
func (b *Bot) note(ctx context.Context, m chatops.Message, text string) {
	if !m.Mentioned && !m.Direct {
		return
	}
	if err := b.Ephemeral(ctx, m.Place, m.User, text); err != nil {
		b.log.WarnContext(ctx, "post an attachment note", "err", err)
	}
}

func mib(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// download fetches a message's attachment, decrypting encrypted files. It
// refuses one that says it is larger than Config.MaxFileBytes before asking
// for it, and stops reading one that turns out to be.
func (b *Bot) download(ctx context.Context, c *event.MessageEventContent) (chatops.File, error) {
	name := c.GetFileName()
	mime := ""
	limit := b.cfg.MaxFileBytes
	if c.Info != nil {
		mime = c.Info.MimeType
		if int64(c.Info.Size) > limit {
			return chatops.File{}, fmt.Errorf("%w: %d bytes declared", ErrFileTooLarge, c.Info.Size)
		}
	}
	uri := c.URL
	if c.File != nil {
		uri = c.File.URL
	}
	parsed, err := uri.Parse()
	if err != nil {
		return chatops.File{}, err
	}
	resp, err := b.cli.Download(ctx, parsed)
	if err != nil {
		return chatops.File{}, err
	}
	defer resp.Body.Close()
	if resp.ContentLength > limit {
		return chatops.File{}, fmt.Errorf("%w: %d bytes", ErrFileTooLarge, resp.ContentLength)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return chatops.File{}, err
	}
	if int64(len(data)) > limit {
		return chatops.File{}, fmt.Errorf("%w: more than %d bytes", ErrFileTooLarge, limit)
	}
	if c.File != nil {
		if err := c.File.DecryptInPlace(data); err != nil {
			return chatops.File{}, err
		}
	}
	return chatops.File{Name: name, MediaType: mime, Data: data}, nil
}

// originTime is an event's origin_server_ts (milliseconds) as a time; zero
// when the server gave none.
func originTime(ms int64) time.Time {
	if ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
