// threadrel.go: the two thread relations. A homeserver that does not
// advertise threads (spec v1.4 or org.matrix.msc3440.stable in /versions;
// Dendrite 0.13.8 does not) makes Element write its thread replies with the
// unstable relation io.element.thread, and file a bot reply sent with
// m.thread in the main timeline. The bot takes both as a thread, remembers
// per thread which one its people write, and answers with that one.

package matrix

import (
	"context"
	"slices"
	"sync"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// RelElementThread is the unstable thread relation (MSC3440) Element writes
// when the homeserver does not advertise threads.
const RelElementThread event.RelationType = "io.element.thread"

// threadRelTypes are the relations that put an event in a thread.
var threadRelTypes = []event.RelationType{event.RelThread, RelElementThread}

// threadParent is the root of the thread rel puts its event in, under
// either relation ("" when none), and the relation it used.
func threadParent(rel *event.RelatesTo) (id.EventID, event.RelationType) {
	if rel == nil || rel.EventID == "" || !slices.Contains(threadRelTypes, rel.Type) {
		return "", ""
	}
	return rel.EventID, rel.Type
}

// asStableThread rewrites an io.element.thread relation as m.thread in place,
// so that mautrix's helpers (GetThreadParent, GetNonFallbackReplyTo) read it
// as the thread it is, and returns the relation it had.
func asStableThread(rel *event.RelatesTo) event.RelationType {
	if rel == nil {
		return ""
	}
	t := rel.Type
	if t == RelElementThread {
		rel.Type = event.RelThread
	}
	return t
}

// setThread puts rel's event in thread with relation type rt (m.thread when
// rt is empty), its fallback reply to fallback.
func setThread(rel *event.RelatesTo, thread, fallback id.EventID, rt event.RelationType) *event.RelatesTo {
	rel.SetThread(thread, fallback)
	if rt == RelElementThread {
		rel.Type = RelElementThread
	}
	return rel
}

// threadKey names a thread: its room and root.
type threadKey struct {
	room id.RoomID
	root id.EventID
}

// threadRels remembers the threads whose people write io.element.thread;
// every other thread is m.thread.
type threadRels struct {
	mu      sync.Mutex
	element map[threadKey]bool
}

// note records the relation a message in the thread came with.
func (t *threadRels) note(room id.RoomID, root id.EventID, rt event.RelationType) {
	if root == "" || rt == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	k := threadKey{room, root}
	if rt == RelElementThread {
		if t.element == nil {
			t.element = map[threadKey]bool{}
		}
		t.element[k] = true
	} else {
		delete(t.element, k)
	}
}

// of is the relation the bot's messages in the thread use.
func (t *threadRels) of(room id.RoomID, root id.EventID) event.RelationType {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.element[threadKey{room, root}] {
		return RelElementThread
	}
	return event.RelThread
}

// threadRelations returns the thread's events under both relations, newest
// first, in at most pages calls of limit events per relation (0: no bound);
// truncated reports that the bound was reached. (An event has one relation,
// so none comes twice.)
func (b *Bot) threadRelations(ctx context.Context, room id.RoomID, root id.EventID, limit, pages int) (evs []*event.Event, truncated bool, err error) {
	for _, rt := range threadRelTypes {
		req := &mautrix.ReqGetRelations{RelationType: rt, Dir: mautrix.DirectionBackward, Limit: limit}
		for page := 0; ; page++ {
			if pages > 0 && page == pages {
				truncated = true
				break
			}
			resp, err := b.cli.GetRelations(ctx, room, root, req)
			if err != nil {
				return nil, false, err
			}
			for _, e := range resp.Chunk {
				e.RoomID = room
			}
			evs = append(evs, resp.Chunk...)
			if resp.NextBatch == "" {
				break
			}
			req.From = resp.NextBatch
		}
	}
	slices.SortStableFunc(evs, func(a, c *event.Event) int { return int(c.Timestamp - a.Timestamp) })
	return evs, truncated, nil
}
