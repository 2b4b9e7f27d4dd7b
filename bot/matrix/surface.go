// surface.go: chatops.Surface on Matrix. A run's answer is one m.notice in the
// thread (m.thread, or io.element.thread where its people write that:
// threadrel.go), edited in place with m.replace relative to that original
// event; cards are notices whose reactions the bot seeds; uploads are m.file or
// m.image (encrypted attachments in encrypted rooms); "ephemeral" replies are notices
// that mention the user, since Matrix has no private messages in a room.

package matrix

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // image.DecodeConfig: an m.image's size
	_ "image/jpeg" // ditto
	_ "image/png"  // ditto
	"slices"
	"strings"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/logkey"
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

// fitted is what to send for o in room: within Config.MaxEventBytes, as
// fitWire makes it; a shrunk message is logged.
func (b *Bot) fitted(ctx context.Context, room id.RoomID, o outgoing) (any, error) {
	enc := b.encrypted(ctx, room)
	wire, shrunk, err := fitWire(o, b.cfg.MaxEventBytes, enc)
	if err != nil {
		return nil, err
	}
	if shrunk != shrunkNone {
		b.log.WarnContext(ctx, "message sent "+shrunk+" to fit one event", logkey.RoomID, room,
			"max_event_bytes", b.cfg.MaxEventBytes, "encrypted", enc, "body_bytes", len(o.v.Body))
	}
	return wire, nil
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
	body, err := b.fitted(ctx, room, outgoing{v: v, thread: id.EventID(p.Thread), threadRel: b.threads.of(room, id.EventID(p.Thread)), onlyOptions: b.onlyOptions(ctx, v.Buttons) != nil, secret: b.secretQuestion(ctx, v.Buttons)})
	if err != nil {
		return "", err
	}
	var extra []mautrix.ReqSendEvent
	if v.Key != "" {
		// The homeserver answers a repeated transaction id with the event it
		// already made: a retry after a lost answer posts nothing twice.
		extra = append(extra, mautrix.ReqSendEvent{TransactionID: txnFor(v.Key)})
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
				b.log.WarnContext(ctx, "seed a card reaction", logkey.RoomID, room, logkey.EventID, evt, "key", k, "err", err)
				break
			}
		}
		b.startPoll(ctx, room, thread, evt, v)
	}
	return string(evt), nil
}

// Update edits message msgID (always the original event) to show v.
func (b *Bot) Update(ctx context.Context, p chatops.Place, msgID string, v chatops.View) error {
	room, err := b.room(p)
	if err != nil {
		return err
	}
	body, err := b.fitted(ctx, room, outgoing{v: v, edit: id.EventID(msgID), onlyOptions: b.onlyOptions(ctx, v.Buttons) != nil, secret: b.secretQuestion(ctx, v.Buttons)})
	if err != nil {
		return err
	}
	asked := b.wasQuestion(ctx, room, p, id.EventID(msgID), v)
	if _, err := b.send(ctx, room, "edit", body); err != nil {
		return err
	}
	b.track(ctx, room, id.EventID(msgID), p, v)
	if asked && len(pollOptions(v)) == 0 {
		b.endPoll(ctx, room, p, id.EventID(msgID), v.Fallback)
	}
	return nil
}

// wasQuestion reports whether message msg offered a question's options (so
// it has a poll) before this update to v: from the cache, or after a restart
// from the message itself when v looks like a settled card (no status, no
// buttons).
func (b *Bot) wasQuestion(ctx context.Context, room id.RoomID, p chatops.Place, msg id.EventID, v chatops.View) bool {
	if c, ok := b.cards.get(msg); ok {
		return len(pollOptions(chatops.View{Buttons: c.buttons})) > 0
	}
	if len(v.Buttons) > 0 || v.Status != "" {
		return false
	}
	orig, err := b.fetch(ctx, room, msg)
	if err != nil || orig.Sender != b.me {
		return false
	}
	bs, _ := buttonsOf(orig.Content.Raw)
	b.cards.put(msg, p, bs) // known now; track replaces it with v's buttons
	return len(pollOptions(chatops.View{Buttons: bs})) > 0
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
	return b.UploadFile(ctx, p, chatops.OutFile{Name: filename, MIMEType: "text/markdown", Content: []byte(content)})
}

// UploadFile posts f in the thread (chatops.FileUploader): an image as an
// m.image with its type, size and, when its header gives them, its width
// and height; anything else as an m.file. In an encrypted room the content
// is an encrypted attachment.
func (b *Bot) UploadFile(ctx context.Context, p chatops.Place, f chatops.OutFile) (string, error) {
	room, err := b.room(p)
	if err != nil {
		return "", err
	}
	data := slices.Clone(f.Content)
	mimeType := cmp.Or(f.MIMEType, "application/octet-stream")
	msg := &event.MessageEventContent{
		MsgType: event.MsgFile, Body: f.Name, FileName: f.Name,
		Info: &event.FileInfo{MimeType: mimeType, Size: len(data)},
	}
	if f.Title != "" && f.Title != f.Name {
		msg.Body = f.Title
	}
	if strings.HasPrefix(mimeType, "image/") {
		msg.MsgType = event.MsgImage
		if c, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
			msg.Info.Width, msg.Info.Height = c.Width, c.Height
		}
	}
	if b.encrypted(ctx, room) {
		ef := attachment.NewEncryptedFile()
		ef.EncryptInPlace(data)
		up, err := b.cli.UploadBytes(ctx, data, "application/octet-stream")
		if err != nil {
			return "", asRateLimit(fmt.Errorf("matrix: upload in %s: %w", room, err), "upload")
		}
		msg.File = &event.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()}
	} else {
		up, err := b.cli.UploadBytesWithName(ctx, data, mimeType, f.Name)
		if err != nil {
			return "", asRateLimit(fmt.Errorf("matrix: upload in %s: %w", room, err), "upload")
		}
		msg.URL = up.ContentURI.CUString()
	}
	if p.Thread != "" {
		setThread(msg.GetRelatesTo(), id.EventID(p.Thread), id.EventID(p.Thread), b.threads.of(room, id.EventID(p.Thread)))
	}
	evt, err := b.send(ctx, room, "file", msg)
	return string(evt), err
}

var _ chatops.FileUploader = (*Bot)(nil)

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
	c := content(chatops.View{Body: b.Mention(u.Qualified()) + ": " + elementWords(text)}, []id.UserID{uid})
	if p.Thread != "" {
		setThread(c.GetRelatesTo(), id.EventID(p.Thread), id.EventID(p.Thread), b.threads.of(room, id.EventID(p.Thread)))
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
			t.log.WarnContext(ctx, "typing notice", logkey.RoomID, room, "err", err)
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
			t.log.WarnContext(ctx, "clear typing notice", logkey.RoomID, room, "err", err)
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
