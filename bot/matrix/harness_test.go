// harness_test.go: the world the end-to-end tests run in: a real Dendrite, the
// real store (Postgres at TEST_DATABASE_URL, or SQLite), run hub, prompt
// service and chatops.Desk, a scripted agent, the bot, and humans as
// mautrix clients that sync and record what they see.

package matrix_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/bot/matrix/dendritetest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// testLog is quiet unless MATRIX_TEST_LOG=1.
func testLog(t *testing.T) *slog.Logger {
	if os.Getenv("MATRIX_TEST_LOG") == "1" {
		return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// scripted is an agent.Provider whose turns are functions.
type scripted struct {
	mu    sync.Mutex
	turns []func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error
}

func (p *scripted) ID() agent.ProviderID { return "fake" }

func (p *scripted) add(f func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = append(p.turns, f)
}

func (p *scripted) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	p.mu.Lock()
	if len(p.turns) == 0 {
		p.mu.Unlock()
		emit(agent.Event{Type: agent.EventRunFailed, Text: "no scripted turn left"})
		return agent.ErrRunFailed
	}
	f := p.turns[0]
	p.turns = p.turns[1:]
	p.mu.Unlock()
	return f(ctx, req, emit)
}

// script is one agent turn: text streamed in pieces, optionally an approval
// in the middle, optionally a gate the turn waits on before its last piece.
type script struct {
	before   []string
	approval bool
	// question asks "Which color?" (red, green, blue) instead of an approval;
	// allowOther also accepts another answer (agent.Question.AllowOther).
	question   bool
	allowOther bool
	after      []string
	gate       <-chan struct{}
	pause      time.Duration
}

// awaitAnswer is the answer a scripted turn waits for; false when ctx ends
// first (the turn then ends interrupted).
func awaitAnswer(ctx context.Context, req agent.RunRequest) (agent.InteractionResponse, bool) {
	select {
	case resp := <-req.Responses:
		return resp, true
	case <-ctx.Done():
		return agent.InteractionResponse{}, false
	}
}

func (s script) turn(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s-" + req.RunID})
	sleep := func() bool {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(s.pause):
			return true
		}
	}
	stream := func(parts []string) bool {
		for _, p := range parts {
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: p})
			if !sleep() {
				return false
			}
		}
		return true
	}
	interrupted := func() error {
		emit(agent.Event{Type: agent.EventRunInterrupted})
		return nil
	}
	if !stream(s.before) {
		return interrupted()
	}
	if s.question {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "ask-1", NativeID: json.RawMessage(`7`), Kind: agent.KindQuestion, Title: "Which color?",
			Questions: []agent.Question{{ID: "color", Text: "Which color?", Options: []string{"red", "green", "blue"}, AllowOther: s.allowOther}},
		}})
		resp, ok := awaitAnswer(ctx, req)
		if !ok {
			return interrupted()
		}
		status := agent.StatusDeclined
		if resp.Decision == agent.DecisionAnswer {
			status = agent.StatusAnswered
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: "You chose " + resp.Answers["color"] + ". "})
		}
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: status, Decision: resp.Decision, By: resp.By}})
	}
	if s.approval {
		emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Summary: "Bash: rm -rf build"}})
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "perm-1", NativeID: json.RawMessage(`"perm-1"`), Kind: agent.KindCommandApproval,
			Title: "Bash: rm -rf build", Command: "rm -rf build",
		}})
		resp, ok := awaitAnswer(ctx, req)
		if !ok {
			return interrupted()
		}
		status := agent.StatusDeclined
		switch resp.Decision {
		case agent.DecisionApprove:
			status = agent.StatusApproved
		case agent.DecisionApproveSession:
			status = agent.StatusApprovedForSession
		case agent.DecisionCancel:
			status = agent.StatusCancelled
		}
		emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: status, Decision: resp.Decision, By: resp.By}})
		emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash"}})
	}
	last := len(s.after)
	if s.gate != nil && last > 0 {
		last--
	}
	if !stream(s.after[:last]) {
		return interrupted()
	}
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return interrupted()
		}
		if !stream(s.after[last:]) {
			return interrupted()
		}
	}
	emit(agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 1200, OutputTokens: 345}})
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// world is one test's homeserver, backend and people.
type world struct {
	t       *testing.T
	hs      *dendritetest.Server
	st      *store.Store
	dialect string
	svc     *prompt.Service
	core    *chatops.Chats
	prov    *scripted
	log     *slog.Logger
	policy  *chatops.Policy
	// homeserver is the URL the bot talks to (default: Dendrite's).
	homeserver string
	// maxEventBytes is the bot's Config.MaxEventBytes (0: the default).
	maxEventBytes int
	// budget, when set, is the desk's budget instead of the tests' quick
	// one (MinInterval minInterval, default rates).
	budget *chatops.Budget
	// redact is the desk's redactor (chatops.DeskOptions.Redact).
	redact chatops.Redactor
	// recoveryKeyFile is the bot's Config.RecoveryKeyFile (cross-signing).
	recoveryKeyFile string

	botUser    dendritetest.User
	alice, bob dendritetest.User

	// the running bot process: its Threads and Bot
	threads *chatops.Desk
	bot     *matrix.Bot
	stop    context.CancelFunc
	done    chan error
}

// minInterval is the least time between two progress edits of one message
// (the desk's Budget.MinInterval in these tests).
const minInterval = 150 * time.Millisecond

func newWorld(t *testing.T, dialect string) *world {
	t.Helper()
	hs := dendritetest.Start(t, dendritetest.Options{})
	st := storetest.Open(t, dialect)
	log := testLog(t)
	hub := runhub.New(st, log, runhub.Options{Owner: "test"})
	t.Cleanup(func() { _ = hub.Close() })
	prov := &scripted{}
	chats := chatstore.Store{St: st}
	svc := prompt.New(hub, chats, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test", Ledger: chats})
	w := &world{
		t: t, hs: hs, st: st, dialect: dialect, svc: svc, prov: prov, log: log,
		core:    chatops.New(chats, svc, chatstore.Feed{Hub: hub, St: st}, nil, log),
		botUser: hs.Register(t, "threadline"), alice: hs.Register(t, "alice"), bob: hs.Register(t, "bob"),
	}
	// alice may run and approve; bob may run but not approve.
	w.policy = &chatops.Policy{}
	w.policy.Set(chatops.Scope{Platform: matrix.Platform, Workspace: dendritetest.ServerName},
		chatops.Rules{Allow: []string{string(w.alice.ID), string(w.bob.ID)}, Approvers: []string{string(w.alice.ID)}})
	return w
}

// startBot starts a bot process (Threads + Bot) over the world's store.
func (w *world) startBot(encryption bool) {
	w.t.Helper()
	w.runBot(w.newBot(encryption))
}

// newBot is a bot (and its desk, w.threads) over the world's store, not
// yet running.
func (w *world) newBot(encryption bool) *matrix.Bot {
	t := w.t
	t.Helper()
	// The desk serves Matrix alone here, so its answer parts take the
	// Matrix part limit of the bot's event size.
	budget := chatops.Budget{MinInterval: minInterval}
	if w.budget != nil {
		budget = *w.budget
	}
	w.threads = chatops.NewDesk(w.core, chatstore.Store{St: w.st}, w.policy, chatops.DeskOptions{
		DefaultAgent: "fake", Workdir: t.TempDir(),
		Budget: budget, Redact: w.redact,
		// No PartLimit: the desk takes the bot's own (chatops.PartLimiter),
		// as in production.
	}, w.log)
	hsURL := w.homeserver
	if hsURL == "" {
		hsURL = w.hs.URL
	}
	bot, err := matrix.New(matrix.Config{
		Homeserver: hsURL, UserID: string(w.botUser.ID), Password: w.botUser.Password,
		Encryption: encryption, CryptoDB: w.st.DB().DB, CryptoDialect: w.dialect,
		RecoveryKeyFile: w.recoveryKeyFile,
		TypingTimeout:   3 * time.Second, MaxEventBytes: w.maxEventBytes,
	}, w.threads, w.st, w.st, w.log)
	if err != nil {
		t.Fatal(err)
	}
	return bot
}

// runBot runs bot until it is ready, and stops it at the test's end.
func (w *world) runBot(bot *matrix.Bot) {
	t := w.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- bot.Run(ctx) }()
	select {
	case <-bot.Ready():
	case err := <-done:
		cancel()
		t.Fatalf("bot did not start: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("bot not ready after 60 s")
	}
	w.bot, w.stop, w.done = bot, cancel, done
	t.Cleanup(w.stopBot)
}

// started is a world with the bot running and alice and bob in a room with
// it (encrypted when asked).
func started(t *testing.T, dialect string, encrypted bool) (w *world, alice, bob *human, room id.RoomID) {
	t.Helper()
	w = newWorld(t, dialect)
	w.startBot(encrypted)
	alice, bob = w.human(w.alice, encrypted), w.human(w.bob, encrypted)
	return w, alice, bob, w.room(alice, bob, encrypted)
}

// stopBot stops the bot process: the sync and the renderers.
func (w *world) stopBot() {
	if w.stop == nil {
		return
	}
	w.stop()
	select {
	case err := <-w.done:
		if err != nil {
			w.t.Errorf("bot.Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		w.t.Error("bot did not stop within 30 s")
	}
	_ = w.threads.Close()
	w.stop = nil
}

// human is a person's client that syncs and records what it sees.
type human struct {
	t    *testing.T
	user dendritetest.User
	cli  *mautrix.Client

	mu     sync.Mutex
	events []*event.Event
	typers map[id.UserID]bool // users ever seen typing
	stop   context.CancelFunc
	done   chan struct{}
}

// humanCrypto sets up end-to-end encryption for a human's client; nil in
// builds without goolm.
var humanCrypto func(t *testing.T, cli *mautrix.Client)

func (w *world) human(u dendritetest.User, encryption bool) *human {
	t := w.t
	t.Helper()
	cli := w.hs.Login(t, u, id.DeviceID(strings.ToUpper(u.Name[:3])+"DEV"))
	h := &human{t: t, user: u, cli: cli, typers: map[id.UserID]bool{}, done: make(chan struct{})}
	syncer := mautrix.NewDefaultSyncer()
	cli.Syncer = syncer
	cli.Store = mautrix.NewMemorySyncStore()
	if encryption {
		if humanCrypto == nil {
			t.Fatal("encryption needs -tags goolm")
		}
		humanCrypto(t, cli)
	} else {
		cli.StateStore = mautrix.NewMemoryStateStore()
		syncer.OnEvent(cli.StateStoreSyncHandler)
	}
	syncer.OnEvent(func(_ context.Context, evt *event.Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		switch evt.Type {
		case event.EventMessage, event.EventReaction, event.StateMember,
			event.EventUnstablePollStart, event.EventUnstablePollResponse, event.EventUnstablePollEnd:
			h.events = append(h.events, evt)
		case event.EphemeralEventTyping:
			for _, u := range evt.Content.AsTyping().UserIDs {
				h.typers[u] = true
			}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	h.stop = cancel
	go func() {
		defer close(h.done)
		if err := cli.SyncWithContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("%s sync: %v", u.Name, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
	})
	return h
}

func (h *human) snapshot() []*event.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

func (h *human) sawTyping(u id.UserID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.typers[u]
}

// wait polls cond over what h has seen until it holds.
func (h *human) wait(what string, timeout time.Duration, cond func(evs []*event.Event) bool) []*event.Event {
	h.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		evs := h.snapshot()
		if cond(evs) {
			return evs
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: waited %s for %s; saw:\n%s", h.user.Name, timeout, what, dump(evs))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dump(evs []*event.Event) string {
	var b strings.Builder
	for _, e := range evs {
		raw, _ := json.Marshal(e.Content.Raw)
		if len(raw) > 300 {
			raw = append(raw[:300], "…"...)
		}
		fmt.Fprintf(&b, "  %s %s %s %s %s key=%q %s\n", e.RoomID, e.ID, e.Sender, e.Type.Type, e.Type.Class.Name(), e.GetStateKey(), raw)
	}
	return b.String()
}

// room creates a room with the bot and bob invited (encrypted when asked)
// and waits until both joined.
func (w *world) room(alice, bob *human, encrypted bool) id.RoomID {
	t := w.t
	t.Helper()
	req := &mautrix.ReqCreateRoom{Preset: "private_chat", Name: "threadline test", Invite: []id.UserID{w.botUser.ID, w.bob.ID}}
	if encrypted {
		req.InitialState = []*event.Event{{
			Type: event.StateEncryption, StateKey: new(string),
			Content: event.Content{Parsed: &event.EncryptionEventContent{Algorithm: id.AlgorithmMegolmV1}},
		}}
	}
	resp, err := alice.cli.CreateRoom(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bob.cli.JoinRoomByID(t.Context(), resp.RoomID); err != nil {
		t.Fatal(err)
	}
	joined := func(u id.UserID) func([]*event.Event) bool {
		return func(evs []*event.Event) bool {
			return slices.ContainsFunc(evs, func(e *event.Event) bool {
				m, _ := e.Content.Raw["membership"].(string)
				return e.RoomID == resp.RoomID && e.Type.Type == event.StateMember.Type && e.GetStateKey() == string(u) && m == "join"
			})
		}
	}
	alice.wait("the bot to join", 30*time.Second, joined(w.botUser.ID))
	alice.wait("bob to join", 30*time.Second, joined(w.bob.ID))
	return resp.RoomID
}

// say sends a text message (a mention of the bot when mention is set) and
// returns its id; thread is the thread to post in ("" for the main timeline).
func (h *human) say(room id.RoomID, thread id.EventID, text string, mention ...id.UserID) id.EventID {
	h.t.Helper()
	c := &event.MessageEventContent{MsgType: event.MsgText, Body: text, Mentions: &event.Mentions{UserIDs: mention}}
	if thread != "" {
		c.GetRelatesTo().SetThread(thread, thread)
	}
	resp, err := h.cli.SendMessageEvent(h.t.Context(), room, event.EventMessage, c)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.EventID
}

func (h *human) react(room id.RoomID, target id.EventID, key string) {
	h.t.Helper()
	if _, err := h.cli.SendReaction(h.t.Context(), room, target, key); err != nil {
		h.t.Fatal(err)
	}
}

// Views of what a human saw from the bot.

func msgContent(e *event.Event) *event.MessageEventContent {
	if e.Type != event.EventMessage {
		return nil
	}
	_ = e.Content.ParseRaw(e.Type)
	return e.Content.AsMessage()
}

// botPosts returns the bot's messages in the thread that are not edits.
func botPosts(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		c := msgContent(e)
		if c == nil || e.Sender != bot || e.RoomID != room || c.RelatesTo.GetReplaceID() != "" {
			continue
		}
		if c.RelatesTo.GetThreadParent() == thread {
			out = append(out, e)
		}
	}
	return out
}

// editsOf returns the edits of orig in order.
func editsOf(evs []*event.Event, orig id.EventID) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if c := msgContent(e); c != nil && c.RelatesTo.GetReplaceID() == orig {
			out = append(out, e)
		}
	}
	return out
}

// current returns what the message shows now: its latest edit's new content
// or the original.
func current(evs []*event.Event, orig *event.Event) *event.MessageEventContent {
	c := msgContent(orig)
	for _, e := range editsOf(evs, orig.ID) {
		if ec := msgContent(e); ec != nil && ec.NewContent != nil {
			c = ec.NewContent
		}
	}
	return c
}

// postWith returns the bot's first post in the thread whose current content
// contains text.
func postWith(evs []*event.Event, bot id.UserID, room id.RoomID, thread id.EventID, text string) *event.Event {
	for _, p := range botPosts(evs, bot, room, thread) {
		if c := current(evs, p); c != nil && strings.Contains(c.Body, text) {
			return p
		}
	}
	return nil
}

// askDone mentions the bot with text in a new thread of room and waits for
// its answer holding answer to be done; it returns the thread's root.
func (w *world) askDone(h *human, room id.RoomID, text, answer string) id.EventID {
	h.t.Helper()
	root := h.say(room, "", text, w.botUser.ID)
	h.wait("the answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, w.botUser.ID, room, root, answer)
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	return root
}
