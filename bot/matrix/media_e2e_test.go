package matrix_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TestAttachmentsOnlyFromAllowedUsers runs on Dendrite, through a proxy that
// records what the bot fetches: a file from someone who may not use the bot
// is never downloaded (the refusal comes first), while an allowed user's file
// reaches the agent.
func TestAttachmentsOnlyFromAllowedUsers(t *testing.T) {
	w := newWorld(t, "sqlite")
	target, err := url.Parse(w.hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var downloads []string
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/media/download/") {
			mu.Lock()
			downloads = append(downloads, r.URL.Path)
			mu.Unlock()
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(front.Close)
	w.homeserver = front.URL
	w.startBot(false)
	alice, bob := w.human(w.alice, false), w.human(w.bob, false)
	room := w.room(alice, bob, false)
	carolUser := w.hs.Register(t, "carol")
	carol := w.human(carolUser, false)
	if _, err := alice.cli.InviteUser(t.Context(), room, &mautrix.ReqInviteUser{UserID: carolUser.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.cli.JoinRoomByID(t.Context(), room); err != nil {
		t.Fatal(err)
	}
	got := make(chan agent.RunRequest, 1)
	w.prov.add(func(_ context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		got <- req
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "read it"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	sendFile := func(h *human, name, body string) id.ContentURI {
		t.Helper()
		up, err := h.cli.UploadBytes(t.Context(), []byte(body), "text/plain")
		if err != nil {
			t.Fatal(err)
		}
		c := &event.MessageEventContent{MsgType: event.MsgFile, Body: "please read this", FileName: name, URL: up.ContentURI.CUString(),
			Info: &event.FileInfo{MimeType: "text/plain", Size: len(body)}, Mentions: &event.Mentions{UserIDs: []id.UserID{w.botUser.ID}}}
		if _, err := h.cli.SendMessageEvent(t.Context(), room, event.EventMessage, c); err != nil {
			t.Fatal(err)
		}
		return up.ContentURI
	}
	carolFile := sendFile(carol, "secret.txt", "carol's file")
	alice.wait("the refusal to carol", waitLong, func(evs []*event.Event) bool {
		for _, e := range evs {
			if c := msgContent(e); e.Sender == w.botUser.ID && c != nil && strings.Contains(c.Body, string(carolUser.ID)) && strings.Contains(c.Body, "not allowed") {
				return true
			}
		}
		return false
	})
	aliceFile := sendFile(alice, "notes.txt", "alice's notes")
	select {
	case req := <-got:
		if !strings.Contains(req.Prompt, "please read this") {
			t.Errorf("prompt %q lacks the message's caption", req.Prompt)
		}
	case <-time.After(waitLong):
		t.Fatal("alice's message did not reach the agent")
	}
	mu.Lock()
	defer mu.Unlock()
	var sawAlice bool
	for _, p := range downloads {
		if strings.HasSuffix(p, "/"+carolFile.FileID) {
			t.Errorf("carol's attachment was downloaded: %s", p)
		}
		sawAlice = sawAlice || strings.HasSuffix(p, "/"+aliceFile.FileID)
	}
	if !sawAlice {
		t.Errorf("alice's attachment was not downloaded (downloads: %q)", downloads)
	}
}
