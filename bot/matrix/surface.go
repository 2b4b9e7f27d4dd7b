// surface.go: chatops.Surface on Matrix. A run's answer is one m.notice in the
// thread (m.thread), edited in place with m.replace relative to that original
// event; cards are notices whose reactions the bot seeds; uploads are m.file
// (encrypted attachments in encrypted rooms); "ephemeral" replies are notices
// that mention the user, since Matrix has no private messages in a room.

package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/chatops"
)

// ErrBadPlace is returned for a place that is not one of this bot's rooms.
var ErrBadPlace = errors.New("matrix: not a Matrix place")

func (b *Bot) room(p chatops.Place) (id.RoomID, error) {
	if p.Platform != Platform || !strings.HasPrefix(p.Channel, "!") {
		return "", fmt.Errorf("%w: %s", ErrBadPlace, p)
	}
	return id.RoomID(p.Channel), nil
}

func (b *Bot) encrypted(ctx context.Context, room id.RoomID) bool {
	if b.cli.StateStore == nil {
		return false
	}
	enc, err := b.cli.StateStore.IsEncrypted(ctx, room)
	return err == nil && enc
}

func (b *Bot) limit(ctx context.Context, room id.RoomID) int {
	if b.encrypted(ctx, room) {
		return maxEncryptedContentBytes
	}
	return maxContentBytes
}

// send sends a message event and turns a lasting 429 into a RateLimitError.
func (b *Bot) send(ctx context.Context, room id.RoomID, method string, content any, extra ...mautrix.ReqSendEvent) (id.EventID, error) {
	resp, err := b.cli.SendMessageEvent(ctx, room, event.EventMessage, content, extra...)
	if err != nil {
		return "", asRateLimit(fmt.Errorf("matrix: %s in %s: %w", method, room, err), method)
	}
	return resp.EventID, nil
}

// Post posts v in the thread (a new top-level message when p.Thread is
// empty) and returns its event id. A card gets its answer reactions seeded.
func (b *Bot) Post(ctx context.Context, p chatops.Place, v chatops.View) (string, error) {
	room, err := b.room(p)
	if err != nil {
		return "", err
	}
	c := content(v, nil)
	if p.Thread != "" {
		c.GetRelatesTo().SetThread(id.EventID(p.Thread), id.EventID(p.Thread))
	}
	if fit(c, b.limit(ctx, room)) {
		b.log.WarnContext(ctx, "message cut to fit one event", "room_id", room)
	}
	var body any = c
	if len(v.Buttons) > 0 {
		if body, err = withButtons(c, v.Buttons); err != nil {
			return "", err
		}
	}
	var extra []mautrix.ReqSendEvent
	if v.Key != "" {
		// The homeserver answers a repeated transaction id with the event it
		// already made: a retry after a lost answer posts nothing twice.
		sum := sha256.Sum256([]byte(v.Key))
		extra = append(extra, mautrix.ReqSendEvent{TransactionID: "tl-" + hex.EncodeToString(sum[:12])})
	}
	evt, err := b.send(ctx, room, "post", body, extra...)
	if err != nil {
		return "", err
	}
	thread := p
	if thread.Thread == "" {
		thread.Thread = string(evt)
	}
	b.track(ctx, room, evt, thread, v)
	if isCard(v) {
		for _, k := range cardKeys(v) {
			if _, err := b.cli.SendReaction(ctx, room, evt, k); err != nil {
				b.log.WarnContext(ctx, "seed a card reaction", "room_id", room, "event_id", evt, "key", k, "err", err)
				break
			}
		}
	}
	return string(evt), nil
}

// Update edits message msgID (always the original event) to show v.
func (b *Bot) Update(ctx context.Context, p chatops.Place, msgID string, v chatops.View) error {
	room, err := b.room(p)
	if err != nil {
		return err
	}
	c := content(v, nil)
	if fit(c, b.limit(ctx, room)) {
		b.log.WarnContext(ctx, "message cut to fit one event", "room_id", room)
	}
	c.SetEdit(id.EventID(msgID))
	var body any = c
	if len(v.Buttons) > 0 {
		if body, err = withButtons(c, v.Buttons); err != nil {
			return err
		}
	}
	if _, err := b.send(ctx, room, "edit", body); err != nil {
		return err
	}
	b.track(ctx, room, id.EventID(msgID), p, v)
	return nil
}

// track remembers the message's buttons and keeps the room's typing notice on
// while a running answer (one offering Stop) is shown.
func (b *Bot) track(ctx context.Context, room id.RoomID, evt id.EventID, p chatops.Place, v chatops.View) {
	if len(v.Buttons) > 0 {
		b.cards.put(evt, p, v.Buttons)
	} else if _, ok := b.cards.get(evt); ok {
		b.cards.put(evt, p, nil)
	}
	if b.typing != nil {
		b.typing.set(ctx, room, evt, hasStop(v))
	}
}

// Upload posts content as a file in the thread.
func (b *Bot) Upload(ctx context.Context, p chatops.Place, filename, content string) (string, error) {
	room, err := b.room(p)
	if err != nil {
		return "", err
	}
	data := []byte(content)
	msg := &event.MessageEventContent{
		MsgType: event.MsgFile, Body: filename, FileName: filename,
		Info: &event.FileInfo{MimeType: "text/markdown", Size: len(data)},
	}
	if b.encrypted(ctx, room) {
		f := attachment.NewEncryptedFile()
		f.EncryptInPlace(data)
		up, err := b.cli.UploadBytes(ctx, data, "application/octet-stream")
		if err != nil {
			return "", asRateLimit(fmt.Errorf("matrix: upload in %s: %w", room, err), "upload")
		}
		msg.File = &event.EncryptedFileInfo{EncryptedFile: *f, URL: up.ContentURI.CUString()}
	} else {
		up, err := b.cli.UploadBytesWithName(ctx, data, "text/markdown", filename)
		if err != nil {
			return "", asRateLimit(fmt.Errorf("matrix: upload in %s: %w", room, err), "upload")
		}
		msg.URL = up.ContentURI.CUString()
	}
	if p.Thread != "" {
		msg.GetRelatesTo().SetThread(id.EventID(p.Thread), id.EventID(p.Thread))
	}
	evt, err := b.send(ctx, room, "file", msg)
	return string(evt), err
}

// reactionNames maps the Slack-style names chatops uses to emoji.
var reactionNames = map[string]string{
	"hourglass_flowing_sand": "⏳",
	"white_check_mark":       "✅",
	"x":                      "❌",
	"eyes":                   "👀",
	"warning":                "⚠️",
}

// React adds a reaction to message msgID.
func (b *Bot) React(ctx context.Context, p chatops.Place, msgID, name string) error {
	room, err := b.room(p)
	if err != nil {
		return err
	}
	key := name
	if k, ok := reactionNames[name]; ok {
		key = k
	}
	_, err = b.cli.SendReaction(ctx, room, id.EventID(msgID), key)
	return asRateLimit(err, "react")
}

// Ephemeral tells u alone what happened; Matrix has no such message, so it is
// a notice in the thread that mentions u.
func (b *Bot) Ephemeral(ctx context.Context, p chatops.Place, u chatops.User, text string) error {
	room, err := b.room(p)
	if err != nil {
		return err
	}
	uid := id.UserID(u.ID)
	c := content(chatops.View{Body: b.Mention(u.Qualified()) + ": " + text}, []id.UserID{uid})
	if p.Thread != "" {
		c.GetRelatesTo().SetThread(id.EventID(p.Thread), id.EventID(p.Thread))
	}
	_, err = b.send(ctx, room, "notice", c)
	return err
}

// Mention renders "matrix:@bob:example.org" as a Matrix user link.
func (b *Bot) Mention(qualified string) string {
	u := chatops.ParseUser(qualified)
	if u.Platform != Platform && u.Platform != "" {
		return qualified
	}
	return "[" + u.ID + "](https://matrix.to/#/" + u.ID + ")"
}

// typing keeps a room's typing notice on while one of the bot's answers in it
// is running.
type typing struct {
	cli     *mautrix.Client
	timeout time.Duration
	log     interface {
		WarnContext(ctx context.Context, msg string, args ...any)
	}

	mu      sync.Mutex
	running map[id.RoomID]map[id.EventID]bool
	stopped map[id.RoomID]chan struct{}
	done    chan struct{}
}

func newTyping(cli *mautrix.Client, timeout time.Duration, log interface {
	WarnContext(ctx context.Context, msg string, args ...any)
}) *typing {
	return &typing{cli: cli, timeout: timeout, log: log,
		running: map[id.RoomID]map[id.EventID]bool{}, stopped: map[id.RoomID]chan struct{}{}, done: make(chan struct{})}
}

// set records whether message evt of room is a running answer; the room types
// while any is.
func (t *typing) set(ctx context.Context, room id.RoomID, evt id.EventID, on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	msgs := t.running[room]
	if on {
		if msgs == nil {
			msgs = map[id.EventID]bool{}
			t.running[room] = msgs
		}
		msgs[evt] = true
		if _, ok := t.stopped[room]; !ok {
			stop := make(chan struct{})
			t.stopped[room] = stop
			go t.loop(room, stop)
		}
		return
	}
	if !msgs[evt] {
		return
	}
	delete(msgs, evt)
	if len(msgs) == 0 {
		delete(t.running, room)
		close(t.stopped[room])
		delete(t.stopped, room)
	}
}

// loop renews the room's typing notice until stop closes, then clears it.
func (t *typing) loop(room id.RoomID, stop chan struct{}) {
	renew := max(t.timeout*2/3, time.Second)
	tick := time.NewTicker(renew)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if _, err := t.cli.UserTyping(ctx, room, true, t.timeout); err != nil {
			t.log.WarnContext(ctx, "typing notice", "room_id", room, "err", err)
		}
		cancel()
		select {
		case <-tick.C:
			continue
		case <-t.done:
		case <-stop:
		}
		ctx, cancel = context.WithTimeout(context.Background(), 15*time.Second)
		if _, err := t.cli.UserTyping(ctx, room, false, 0); err != nil {
			t.log.WarnContext(ctx, "clear typing notice", "room_id", room, "err", err)
		}
		cancel()
		return
	}
}

// stop ends every typing notice.
func (t *typing) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	select {
	case <-t.done:
	default:
		close(t.done)
	}
}

// Typing reports whether the bot shows typing in the room (for tests).
func (b *Bot) Typing(room id.RoomID) bool {
	if b.typing == nil {
		return false
	}
	b.typing.mu.Lock()
	defer b.typing.mu.Unlock()
	return len(b.typing.running[room]) > 0
}
