package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// roomWatcher collects what a human client sees.
type roomWatcher struct {
	mu     sync.Mutex
	events []*event.Event
}

func (w *roomWatcher) add(_ context.Context, e *event.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
}

// waitFor polls the seen events until cond finds one, and returns it.
func (w *roomWatcher) waitFor(t *testing.T, what string, cond func(e *event.Event) bool) *event.Event {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		i := slices.IndexFunc(w.events, cond)
		var e *event.Event
		if i >= 0 {
			e = w.events[i]
		}
		w.mu.Unlock()
		if e != nil {
			return e
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var seen []string
	for _, e := range w.events {
		seen = append(seen, fmt.Sprintf("%s %s %v", e.Sender, e.Type.Type, e.Content.Raw))
	}
	t.Fatalf("timed out waiting for %s; saw:\n%s", what, strings.Join(seen, "\n"))
	return nil
}

// body is a message's text, or its replacement's for an edit.
func body(e *event.Event) string {
	if e.Type != event.EventMessage {
		return ""
	}
	if nc, ok := e.Content.Raw["m.new_content"].(map[string]any); ok {
		s, _ := nc["body"].(string)
		return s
	}
	s, _ := e.Content.Raw["body"].(string)
	return s
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestServeMatrixEndToEnd runs `threadline serve` as configured by a user: a real
// Dendrite homeserver, the real Claude Code CLI against the scripted API fake,
// all inside a loopback-only network namespace. A human invites the bot,
// mentions it, sees the answer streamed as edits, and approves a command by
// reacting ✅.
func TestServeMatrixEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	claudeBin := fakeapi.FindClaude(t)
	hs := dendritetest.Start(t, dendritetest.Options{RateLimit: &dendritetest.RateLimit{Disabled: true}})
	dir := isolate(t)
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	botUser := hs.Register(t, "threadline")
	alice := hs.Register(t, "alice")
	api := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "touch approved.txt && echo approved-run", "description": "Create approved.txt"})),
		fakeapi.Text("Hello", " from", " Claude", " over Matrix."),
	)
	listen := freePort(t)
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"}, // isolation is TestRunIsolatedEndToEnd's subject
		"http":     map[string]any{"listen": listen},
		"workdir":  work,
		"access":   map[string]any{"admins": []string{"matrix:" + string(alice.ID)}},
		"defaults": map[string]any{"agent": "claude"},
		"agents":   map[string]any{"claude": map[string]any{"bin": claudeBin, "env": api.ClaudeEnv(filepath.Join(dir, "claude-home"))}},
		"matrix":   map[string]any{"homeserver": hs.URL, "user_id": string(botUser.ID), "password": botUser.Password},
	}
	raw, _ := yaml.Marshal(cfg)
	cfgPath := filepath.Join(dir, "threadline.yaml")
	os.WriteFile(cfgPath, raw, 0o600)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var logs lockedBuffer
	served := make(chan error, 1)
	go func() { served <- cmdServe(ctx, []string{"--config", cfgPath}, io.Discard, &logs) }()

	// The human: a plain mautrix client that records what it sees.
	cli := hs.Login(t, alice, "ALICEDEV")
	var seen roomWatcher
	syncer := mautrix.NewDefaultSyncer()
	syncer.OnEvent(seen.add)
	cli.Syncer, cli.Store = syncer, mautrix.NewMemorySyncStore()
	sctx, stopSync := context.WithCancel(context.Background())
	syncDone := make(chan struct{})
	go func() { defer close(syncDone); _ = cli.SyncWithContext(sctx) }()
	defer func() { stopSync(); <-syncDone }()

	room, err := cli.CreateRoom(t.Context(), &mautrix.ReqCreateRoom{Preset: "private_chat", Invite: []id.UserID{botUser.ID}})
	if err != nil {
		t.Fatal(err)
	}
	seen.waitFor(t, "the bot to join", func(e *event.Event) bool {
		m, _ := e.Content.Raw["membership"].(string)
		return e.Type == event.StateMember && e.GetStateKey() == string(botUser.ID) && m == "join"
	})
	// Connected, the bot is healthy: it synced and the homeserver says who it is.
	chatopstest.WaitFor(t, `/healthz "matrix":"ok"`, func() bool {
		code, body := get("http://" + listen + "/healthz")
		return code == 200 && strings.Contains(body, `"matrix":"ok"`)
	})
	say := func(thread id.EventID, text string) id.EventID {
		c := &event.MessageEventContent{MsgType: event.MsgText, Body: string(botUser.ID) + " " + text, Mentions: &event.Mentions{UserIDs: []id.UserID{botUser.ID}}}
		if thread != "" {
			c.GetRelatesTo().SetThread(thread, thread)
		}
		resp, err := cli.SendMessageEvent(t.Context(), room.RoomID, event.EventMessage, c)
		if err != nil {
			t.Fatal(err)
		}
		return resp.EventID
	}

	root := say("", "say hello")
	seen.waitFor(t, "the streamed answer", func(e *event.Event) bool {
		return e.Sender == botUser.ID && strings.Contains(body(e), "Hello from Claude over Matrix.")
	})

	say(root, "TOOL please")
	card := seen.waitFor(t, "the approval card", func(e *event.Event) bool {
		return e.Sender == botUser.ID && strings.Contains(body(e), "touch approved.txt") && strings.Contains(body(e), "✅ approve")
	})
	if _, err := cli.SendReaction(t.Context(), room.RoomID, card.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	seen.waitFor(t, "the answer after the approval", func(e *event.Event) bool {
		return e.Sender == botUser.ID && strings.Contains(body(e), "Tool result: approved-run")
	})

	stop()
	select {
	case err := <-served:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("serve: %v\n%s", err, logs.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "shutdown complete") {
		t.Errorf("no orderly shutdown:\n%s", logs.String())
	}
}
