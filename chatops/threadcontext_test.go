package chatops_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// talk is a thread's conversation as its platform holds it: every message
// is in the thread's history, and the ones the bot sees are handed to the
// desk as the front-end would.
type talk struct {
	f   *fixture
	at  time.Time
	seq int
}

func newTalk(f *fixture) *talk {
	return &talk{f: f, at: time.Now().Add(-time.Hour).Truncate(time.Second)}
}

// said adds a message to the thread's history without the bot acting on it
// (someone talking to others, or the bot's own earlier post).
func (k *talk) said(author, text string, own bool, files ...string) chatops.ThreadMessage {
	k.seq++
	k.at = k.at.Add(time.Minute)
	id := "U" + strings.ToUpper(author) // "alice": UALICE; "UBOB" is an id already
	if strings.HasPrefix(author, "U") {
		id = author
	}
	m := chatops.ThreadMessage{ID: fmt.Sprintf("1690000100.%06d", k.seq), Author: author, AuthorID: id,
		Own: own, Time: k.at, Text: text, Files: files}
	k.f.surf.say(thread, m)
	return m
}

// tell hands the message to the desk too: mentioned or not.
func (k *talk) tell(t *testing.T, who, text string, mentioned bool) {
	t.Helper()
	m := k.said(who, text, false)
	if err := k.f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, ID: m.ID, Sent: m.Time,
		User: user(m.AuthorID), Text: text, Mentioned: mentioned}); err != nil {
		t.Fatal(err)
	}
}

// prompt mentions the bot and returns the prompt the agent got for it,
// after its turn ended.
func (k *talk) prompt(t *testing.T, text string) string {
	t.Helper()
	n := len(k.f.prov.Requests())
	k.f.prov.Add(chatopstest.Answer("ok"))
	k.tell(t, "UALLOWED", text, true)
	waitFor(t, "the agent's request", func() bool { return len(k.f.prov.Requests()) > n })
	chatID := k.f.chatOf(t, thread)
	waitFor(t, "the turn's end", func() bool { _, busy := k.f.bot.Active(chatID); return !busy })
	return k.f.prov.Requests()[n].Prompt
}

// TestThreadContextFirstPrompt: a chat started in a thread with three human
// messages and one of the bot's gets them, in order, with authors, times
// and file names, the bot's marked as its own, then the request.
func TestThreadContextFirstPrompt(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	k := newTalk(f)
	k.said("alice", "The login page returns 500 since this morning.", false)
	k.said("bob", "Same here, log attached.", false, "error.log")
	k.said("", "Earlier I looked at the session store.", true)
	k.said("carol", "It started after the deploy at 9.", false)
	got := k.prompt(t, "can you fix this?")

	want := []string{
		"Earlier in this thread (the messages before you were asked, oldest first):",
		"alice (UALICE), ", ":\nThe login page returns 500 since this morning.",
		"bob (UBOB), ", "Same here, log attached.\n(attached: error.log)",
		"Threadline (you, earlier), ", ":\nEarlier I looked at the session store.",
		"carol (UCAROL), ", "It started after the deploy at 9.",
		"\n\nRequest:\ncan you fix this?",
	}
	at := 0
	for _, w := range want {
		i := strings.Index(got[at:], w)
		if i < 0 {
			t.Fatalf("prompt lacks %q in order:\n%s", w, got)
		}
		at += i + len(w)
	}
	if !strings.HasSuffix(got, "Request:\ncan you fix this?") {
		t.Errorf("the request is not last:\n%s", got)
	}
	if !strings.Contains(got, k.at.Add(-3*time.Minute).UTC().Format("2006-01-02 15:04 UTC")) {
		t.Errorf("alice's time is missing:\n%s", got)
	}
}

// TestThreadContextBounded: a long thread keeps its newest messages within
// the bound and says how many were left out.
func TestThreadContextBounded(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{ContextBytes: 2000})
	k := newTalk(f)
	for i := range 200 {
		k.said("dave", fmt.Sprintf("message number %03d with some words", i), false)
	}
	got := k.prompt(t, "summarize")
	block, _, ok := strings.Cut(got, "\n\nRequest:\n")
	if !ok {
		t.Fatalf("no request header:\n%s", got)
	}
	if len(block) > 2000 {
		t.Errorf("context of %d bytes, bound 2000", len(block))
	}
	if !strings.Contains(block, "message number 199") || strings.Contains(block, "message number 000") {
		t.Errorf("the newest must be kept, the oldest cut:\n%s", block)
	}
	var left int
	if _, err := fmt.Sscanf(block[strings.Index(block, "\n\n[")+3:], "%d earlier messages left out]", &left); err != nil {
		t.Fatalf("no cut line: %v\n%s", err, block)
	}
	if kept := strings.Count(block, "message number"); kept+left != 200 || kept < 10 {
		t.Errorf("kept %d, left out %d, of 200", kept, left)
	}
}

// TestThreadContextLongMessage: a newest message longer than the bound on
// its own keeps its beginning, cut.
func TestThreadContextLongMessage(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{ContextBytes: 1000})
	k := newTalk(f)
	k.said("erin", "short one", false)
	k.said("erin", "start "+strings.Repeat("é", 3000), false)
	got := k.prompt(t, "look")
	block, _, _ := strings.Cut(got, "\n\nRequest:\n")
	if len(block) > 1000 || !strings.Contains(block, "start éé") || !strings.Contains(block, "[…cut]") ||
		!strings.Contains(block, "[1 earlier message left out]") {
		t.Errorf("context (%d bytes):\n%s", len(block), block)
	}
}

// TestThreadContextOff: a channel with thread_context off gives the agent
// the request alone, and does not read the thread.
func TestThreadContextOff(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	r := f.policy.Rules[chatops.Scope{Platform: "slack", Channel: "C1"}]
	r.ThreadContext = "off"
	f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, r)
	k := newTalk(f)
	k.said("alice", "secret plans", false)
	if got := k.prompt(t, "hello"); got != "hello" {
		t.Errorf("prompt %q, want the request alone", got)
	}
	k.said("bob", "more plans", false)
	if got := k.prompt(t, "again"); got != "again" {
		t.Errorf("second prompt %q, want the request alone", got)
	}
	f.surf.mu.Lock()
	defer f.surf.mu.Unlock()
	if len(f.surf.queries) != 0 {
		t.Errorf("the thread was read %d times", len(f.surf.queries))
	}
}

// TestThreadContextScrubbed: a configured secret in a thread message does
// not reach the agent.
func TestThreadContextScrubbed(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	const secret = "xoxp-1234567890-s3cr3t"
	f := setup(t, st, chatops.DeskOptions{Redact: redact.New(secret)})
	k := newTalk(f)
	k.said("alice", "the token is "+secret+", don't share", false, "notes-"+secret+".txt")
	got := k.prompt(t, "why does auth fail?")
	if strings.Contains(got, secret) {
		t.Fatalf("the secret reached the agent:\n%s", got)
	}
	if !strings.Contains(got, "the token is "+redact.Mask+", don't share") {
		t.Errorf("prompt:\n%s", got)
	}
}

// TestThreadContextMeanwhile: what others said while the bot was not
// addressed reaches the next addressed prompt, once; the bot's own answers
// and the earlier prompt are not repeated.
func TestThreadContextMeanwhile(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	k := newTalk(f)
	k.said("alice", "before the chat", false)
	first := k.prompt(t, "first request")
	if !strings.Contains(first, "before the chat") {
		t.Fatalf("first prompt:\n%s", first)
	}
	k.said("", "ok (the bot's answer)", true)
	k.tell(t, "UBOB", "bob, not addressing the bot", false)
	k.tell(t, "UCAROL", "carol adds a detail", false)
	if n := len(f.prov.Requests()); n != 1 {
		t.Fatalf("unaddressed messages started runs: %d requests", n)
	}
	second := k.prompt(t, "second request")
	block, req, ok := strings.Cut(second, "\n\nRequest:\n")
	if !ok || req != "second request" {
		t.Fatalf("second prompt:\n%s", second)
	}
	if !strings.HasPrefix(block, "Said in this thread since your last turn (by others, oldest first):") ||
		!strings.Contains(block, "bob, not addressing the bot") || !strings.Contains(block, "carol adds a detail") ||
		strings.Index(block, "bob,") > strings.Index(block, "carol adds") {
		t.Errorf("meanwhile block:\n%s", block)
	}
	for _, old := range []string{"before the chat", "first request", "the bot's answer", "second request"} {
		if strings.Contains(block, old) {
			t.Errorf("meanwhile repeats %q:\n%s", old, block)
		}
	}
	third := k.prompt(t, "third request")
	if third != "third request" {
		t.Errorf("third prompt repeats what was said before the second:\n%s", third)
	}
}

// TestThreadContextAfterRestart: a desk that does not remember the bot's
// last prompt in a thread (a restart) takes the chat's last run as it.
func TestThreadContextAfterRestart(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	k := newTalk(f)
	k.prompt(t, "the request before the restart")
	// The second desk over the same store and stack: a restarted process.
	d2 := chatops.NewDesk(f.bot, chatstore.Store{St: f.st}, f.policy, chatops.DeskOptions{Budget: testBudget, Workdir: f.work}, nil)
	t.Cleanup(func() { d2.Close() })
	d2.Attach("slack", f.surf)
	k.f = &fixture{st: f.st, prov: f.prov, bot: f.bot, threads: d2, surf: f.surf, policy: f.policy, work: f.work}
	k.at = time.Now().Add(time.Second) // after the first run started
	k.said("bob", "said while the bot was away", false)
	got := k.prompt(t, "second")
	if !strings.HasPrefix(got, "Said in this thread since your last turn") || !strings.Contains(got, "said while the bot was away") ||
		strings.Contains(got, "the request before the restart") {
		t.Errorf("prompt after a restart:\n%s", got)
	}
}

// TestThreadContextUnreadable: a thread that cannot be read costs the
// context, not the prompt; the thread is told in one line.
func TestThreadContextUnreadable(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	f.surf.historyErr = errors.New("missing_scope")
	k := newTalk(f)
	k.said("alice", "earlier", false)
	if got := k.prompt(t, "do it"); got != "do it" {
		t.Errorf("prompt %q", got)
	}
	if m := f.find(thread, func(m *message) bool {
		return strings.Contains(m.view.Body, "could not read this thread's earlier messages")
	}); m == nil {
		t.Error("the thread was not told that its messages could not be read")
	}
}

// TestThreadContextQueued: a prompt queued behind a running turn gets what
// was said before it when it starts, not the prompts queued with it.
func TestThreadContextQueued(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	k := newTalk(f)
	release := make(chan struct{})
	f.prov.Add(chatopstest.Gated(release, "working"))
	k.tell(t, "UALLOWED", "long job", true)
	waitFor(t, "the first run", func() bool { return len(f.prov.Requests()) == 1 })
	f.prov.Add(chatopstest.Answer("a"), chatopstest.Answer("b"))
	k.tell(t, "UBOB", "bob chats", false)
	k.tell(t, "UALLOWED", "queued one", true)
	k.tell(t, "UCAROL", "carol chats", false)
	k.tell(t, "UALLOWED", "queued two", true)
	close(release)
	waitFor(t, "the queued prompts", func() bool { return len(f.prov.Requests()) == 3 })
	reqs := f.prov.Requests()
	one, two := reqs[1].Prompt, reqs[2].Prompt
	if !strings.Contains(one, "bob chats") || strings.Contains(one, "carol chats") || !strings.HasSuffix(one, "Request:\nqueued one") {
		t.Errorf("first queued prompt:\n%s", one)
	}
	if !strings.Contains(two, "carol chats") || strings.Contains(two, "bob chats") || strings.Contains(two, "queued one") ||
		!strings.HasSuffix(two, "Request:\nqueued two") {
		t.Errorf("second queued prompt:\n%s", two)
	}
}
