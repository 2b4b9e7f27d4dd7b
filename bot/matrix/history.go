// history.go: a thread's messages for the agent's context
// (chatops.ThreadReader): the thread's root and its thread relations
// (m.thread and io.element.thread), or, for a message that starts its
// thread, the chain of replies it answers; each in its latest edit,
// decrypted where the bot holds the keys, with its sender's display name in
// the room.

package matrix

import (
	"context"
	"errors"
	"slices"
	"strings"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// Bounds of one thread read.
const (
	// relationsPage is the /relations limit per call; relationsPages bounds
	// the calls of one read.
	relationsPage  = 100
	relationsPages = 20
	// replyChainMax bounds the replies followed back from a message.
	replyChainMax = 50
	// editLookups bounds the newest messages whose latest edit is looked up.
	editLookups = 100
)

var _ chatops.ThreadReader = (*Bot)(nil)

// ThreadHistory returns the thread's messages (chatops.ThreadReader),
// oldest first. A message that started its thread (q.Before is the thread's
// root) gets the chain of messages it replies to; any other gets the
// thread's root and its replies (m.thread or io.element.thread), those after q.Since. Events the
// bot cannot decrypt are left out (and logged).
func (b *Bot) ThreadHistory(ctx context.Context, p chatops.Place, q chatops.HistoryQuery) ([]chatops.ThreadMessage, error) {
	room, err := b.room(p)
	if err != nil {
		return nil, err
	}
	var evts []*event.Event
	if q.Before == p.Thread {
		evts, err = b.replyChain(ctx, room, id.EventID(q.Before))
	} else {
		evts, err = b.threadEvents(ctx, room, id.EventID(p.Thread), q)
	}
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(evts, func(a, c *event.Event) int { return int(a.Timestamp - c.Timestamp) })
	edited := b.latestEdits(ctx, room, evts)
	out := make([]chatops.ThreadMessage, 0, len(evts))
	for _, e := range evts {
		if e.ID == id.EventID(q.Before) {
			break
		}
		m, ok := b.threadMessage(ctx, room, e, edited[e.ID])
		if ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// replyChain returns the messages evt replies to, back along m.in_reply_to.
func (b *Bot) replyChain(ctx context.Context, room id.RoomID, evt id.EventID) ([]*event.Event, error) {
	e, err := b.fetch(ctx, room, evt)
	if err != nil {
		return nil, err
	}
	var out []*event.Event
	for range replyChainMax {
		to := replyTo(e)
		if to == "" {
			break
		}
		if e, err = b.fetch(ctx, room, to); err != nil {
			b.log.InfoContext(ctx, "a reply's earlier message is out of reach", logkey.RoomID, room, logkey.EventID, to, "err", err)
			break
		}
		out = append(out, e)
	}
	return out, nil
}

// replyTo is the event e explicitly replies to ("" for none, or a thread's
// fallback reply).
func replyTo(e *event.Event) id.EventID {
	if err := e.Content.ParseRaw(e.Type); err != nil && !errors.Is(err, event.ErrContentAlreadyParsed) {
		return ""
	}
	c := e.Content.AsMessage()
	if c == nil {
		return ""
	}
	return c.RelatesTo.GetNonFallbackReplyTo()
}

// threadEvents returns the thread's root and its thread relations (m.thread
// and io.element.thread) newer than q.Since, page by page (the whole thread
// is paged: a server need not honour dir).
func (b *Bot) threadEvents(ctx context.Context, room id.RoomID, root id.EventID, q chatops.HistoryQuery) ([]*event.Event, error) {
	r, err := b.fetch(ctx, room, root)
	if err != nil {
		return nil, err
	}
	out := []*event.Event{r}
	rels, truncated, err := b.threadRelations(ctx, room, root, relationsPage, relationsPages)
	if err != nil {
		return nil, err
	}
	for _, e := range rels {
		if q.Since.IsZero() || e.Timestamp > q.Since.UnixMilli() {
			out = append(out, e)
		}
	}
	if truncated {
		b.log.WarnContext(ctx, "thread longer than the context read; the rest is left out", logkey.RoomID, room, logkey.ThreadID, root, logkey.Count, len(out))
	}
	return out, nil
}

// latestEdits returns the newest replacement content (m.new_content) of the
// newest editLookups messages that were edited.
func (b *Bot) latestEdits(ctx context.Context, room id.RoomID, evts []*event.Event) map[id.EventID]*event.MessageEventContent {
	out := map[id.EventID]*event.MessageEventContent{}
	for i := len(evts) - 1; i >= 0 && i >= len(evts)-editLookups; i-- {
		e := evts[i]
		resp, err := b.cli.GetRelations(ctx, room, e.ID, &mautrix.ReqGetRelations{RelationType: event.RelReplace, Limit: relationsPage})
		if err != nil {
			b.log.InfoContext(ctx, "read a message's edits", logkey.RoomID, room, logkey.EventID, e.ID, "err", err)
			continue
		}
		var newest *event.Event
		for _, r := range resp.Chunk {
			r.RoomID = room
			if r.Sender != e.Sender {
				continue // only the sender may edit a message
			}
			if newest == nil || r.Timestamp > newest.Timestamp {
				newest = r
			}
		}
		if newest == nil {
			continue
		}
		d, err := b.decrypted(ctx, newest)
		if err != nil {
			continue
		}
		if perr := d.Content.ParseRaw(d.Type); perr != nil && !errors.Is(perr, event.ErrContentAlreadyParsed) {
			continue
		}
		if c := d.Content.AsMessage(); c != nil && c.NewContent != nil {
			out[e.ID] = c.NewContent
		}
	}
	return out
}

// threadMessage turns a thread event into a chatops message; ok is false
// for what is not a readable message (state, reactions, redacted or
// undecryptable events).
func (b *Bot) threadMessage(ctx context.Context, room id.RoomID, e *event.Event, edit *event.MessageEventContent) (chatops.ThreadMessage, bool) {
	d, err := b.decrypted(ctx, e)
	if err != nil {
		b.log.InfoContext(ctx, "a thread message the bot cannot read is left out of the context", logkey.RoomID, room, logkey.EventID, e.ID, "err", err)
		return chatops.ThreadMessage{}, false
	}
	if d.Type != event.EventMessage && d.Type != event.EventSticker {
		return chatops.ThreadMessage{}, false
	}
	if perr := d.Content.ParseRaw(d.Type); perr != nil && !errors.Is(perr, event.ErrContentAlreadyParsed) {
		return chatops.ThreadMessage{}, false
	}
	c := d.Content.AsMessage()
	if c == nil || c.RelatesTo.GetReplaceID() != "" {
		return chatops.ThreadMessage{}, false
	}
	if edit != nil {
		c = edit
	}
	c.RemoveReplyFallback()
	m := chatops.ThreadMessage{ID: string(d.ID), AuthorID: string(d.Sender), Own: d.Sender == b.me, Time: originTime(d.Timestamp), Text: c.Body}
	if c.MsgType.IsMedia() {
		m.Files = []string{c.GetFileName()}
		m.Text = c.GetCaption()
	}
	if !m.Own {
		m.Author = b.memberName(ctx, room, d.Sender)
	}
	return m, strings.TrimSpace(m.Text) != "" || len(m.Files) > 0
}

// memberName is a member's display name in the room ("" when it has none).
func (b *Bot) memberName(ctx context.Context, room id.RoomID, u id.UserID) string {
	if b.cli.StateStore != nil {
		if m, err := b.cli.StateStore.GetMember(ctx, room, u); err == nil && m != nil && m.Displayname != "" {
			return m.Displayname
		}
	}
	var m event.MemberEventContent
	if err := b.cli.StateEvent(ctx, room, event.StateMember, string(u), &m); err == nil && m.Displayname != "" {
		return m.Displayname
	}
	return ""
}
