package matrix_test

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// TestFetchThreadFileOnDendrite: a file a person posts in the chat's
// thread is fetched through the chat's thread tools with the same bytes
// (the homeserver's authenticated media API); a file of another thread is
// not reached. An image sent through the Thread arrives as an m.image with
// its mimetype, size, width and height (encrypted in an encrypted room).
func TestFetchThreadFileOnDendrite(t *testing.T) {
	threadToolsFlow(t, false)
}

// threadToolsFlow starts a chat in a thread, posts a file there (an
// encrypted attachment in an encrypted room) and one in another thread,
// and fetches the first through the chat's Thread.
func threadToolsFlow(t *testing.T, encrypted bool) {
	w := newWorld(t, "sqlite")
	w.startBot(encrypted)
	alice, bob := w.human(w.alice, encrypted), w.human(w.bob, encrypted)
	room := w.room(alice, bob, encrypted)
	w.prov.add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "looking"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	root := w.askDone(alice, room, "look at the data", "looking")
	data := []byte("\x00\x01binary data\xff\xfe" + strings.Repeat("x", 3000))
	postFile(t, alice, room, root, "data.bin", data, encrypted)
	other := alice.say(room, "", "another topic")
	postFile(t, alice, room, other, "other.bin", []byte("not this thread's"), encrypted)

	th, ok := w.threads.ToolThread(t.Context(), w.binding(room, root).ChatID)
	if !ok {
		t.Fatal("the chat has no tool thread")
	}
	rc, tf, err := th.Fetch(t.Context(), "data.bin")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != string(data) {
		t.Fatalf("fetched %d bytes (%v), want %d", len(got), err, len(data))
	}
	if tf.Size != int64(len(data)) || tf.MIMEType != "application/x-test" {
		t.Errorf("file %+v", tf)
	}
	if _, _, err := th.Fetch(t.Context(), "other.bin"); err == nil || !strings.Contains(err.Error(), "data.bin") {
		t.Errorf("another thread's file: %v", err)
	}

	// An image sent with send_file is an m.image with its type and size.
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if _, err := th.SendFile(t.Context(), threadtools.File{Name: "chart.png", MIMEType: "image/png", Content: buf.Bytes(), Size: int64(buf.Len())}); err != nil {
		t.Fatal(err)
	}
	var sent *event.MessageEventContent
	alice.wait("the image", waitLong, func(evs []*event.Event) bool {
		for _, p := range botPosts(evs, w.botUser.ID, room, root) {
			if c := msgContent(p); c != nil && c.FileName == "chart.png" {
				sent = c
				return true
			}
		}
		return false
	})
	if sent.MsgType != event.MsgImage || sent.Info == nil || sent.Info.MimeType != "image/png" || sent.Info.Size != buf.Len() ||
		sent.Info.Width != 3 || sent.Info.Height != 2 {
		t.Errorf("the image arrived as %s %+v", sent.MsgType, sent.Info)
	}
	if got := download(t, alice, sent, encrypted); got != buf.String() {
		t.Errorf("the image's bytes differ (%d, want %d)", len(got), buf.Len())
	}
}

// postFile posts data as an m.file called name in the thread (encrypted
// as an attachment when encrypted).
func postFile(t *testing.T, h *human, room id.RoomID, thread id.EventID, name string, data []byte, encrypted bool) {
	t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgFile, Body: name, FileName: name,
		Info: &event.FileInfo{MimeType: "application/x-test", Size: len(data)}}
	body := append([]byte(nil), data...)
	if encrypted {
		f := attachment.NewEncryptedFile()
		f.EncryptInPlace(body)
		up, err := h.cli.UploadBytes(t.Context(), body, "application/octet-stream")
		if err != nil {
			t.Fatal(err)
		}
		c.File = &event.EncryptedFileInfo{EncryptedFile: *f, URL: up.ContentURI.CUString()}
	} else {
		up, err := h.cli.UploadBytes(t.Context(), body, "application/x-test")
		if err != nil {
			t.Fatal(err)
		}
		c.URL = up.ContentURI.CUString()
	}
	c.GetRelatesTo().SetThread(thread, thread)
	if _, err := h.cli.SendMessageEvent(t.Context(), room, event.EventMessage, c); err != nil {
		t.Fatal(err)
	}
}
