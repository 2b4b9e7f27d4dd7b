package console_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// lockedBuffer is a strings.Builder safe for a writer and a polling reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func stack(t *testing.T) (*chatopstest.Stack, agent.ChatID) {
	t.Helper()
	s := chatopstest.NewStack(t, storetest.Open(t, store.DialectSQLite), nil)
	c := store.Chat{ID: "c1", Agent: "fake", Mode: "default", Cwd: t.TempDir()}
	if err := s.St.CreateChat(t.Context(), &c); err != nil {
		t.Fatal(err)
	}
	return s, agent.ChatID(c.ID)
}

// TestOneShotText: the agent's text on Out, ended with a newline; nothing on
// Err; the run completed.
func TestOneShotText(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Answer("Hello", " world"))
	var out, errOut lockedBuffer
	o := &console.OneShot{Bot: s.Bot, Out: &out, Err: &errOut, By: "cli:t", Policy: "deny"}
	run, err := o.Run(t.Context(), chat, "hi")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status() != runhub.StatusCompleted {
		t.Errorf("status %s", run.Status())
	}
	if out.String() != "Hello world\n" || errOut.String() != "" {
		t.Errorf("out %q, err %q", out.String(), errOut.String())
	}
}

// TestOneShotJSONL: every event of the run is one flat JSON line with the
// envelope (type, seq, chat_id, run_id, at) and the payload's fields; no text.
func TestOneShotJSONL(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Answer("Hi"))
	var out, errOut lockedBuffer
	o := &console.OneShot{Bot: s.Bot, Out: &out, Err: &errOut, By: "cli:t", JSONL: true}
	run, err := o.Run(t.Context(), chat, "hi")
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	var last int64
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev struct {
			Type   string `json:"type"`
			Seq    int64  `json:"seq"`
			ChatID string `json:"chat_id"`
			RunID  string `json:"run_id"`
			Text   string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		if ev.ChatID != string(chat) || ev.RunID != string(run.ID) || ev.Seq <= last {
			t.Errorf("envelope of %q (last seq %d)", line, last)
		}
		last = ev.Seq
		types = append(types, ev.Type)
		if ev.Type == "assistant.delta" && ev.Text != "Hi" {
			t.Errorf("delta %q", ev.Text)
		}
	}
	if got := strings.Join(types, " "); !strings.HasPrefix(got, "user.message run.started") || !strings.HasSuffix(got, "run.completed") || !strings.Contains(got, "assistant.delta") {
		t.Errorf("types %q", got)
	}
}

// TestOneShotAsks: with Ask, the card is shown on Err after the text so far
// ends its line, the typed answer goes to the agent, and the resolution
// names who answered.
func TestOneShotAsks(t *testing.T) {
	s, chat := stack(t)
	got := make(chan agent.InteractionResponse, 1)
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "thinking"})
		return chatopstest.Asking("i1", "rm -rf build", got, "done")(ctx, req, emit)
	})
	var out, errOut lockedBuffer
	o := &console.OneShot{Bot: s.Bot, In: strings.NewReader("y\n"), Out: &out, Err: &errOut, By: "cli:t", Ask: true}
	run, err := o.Run(t.Context(), chat, "go")
	if err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Decision != agent.DecisionApprove || r.By != "cli:t" {
		t.Errorf("answer %+v", r)
	}
	if run.Status() != runhub.StatusCompleted {
		t.Errorf("status %s", run.Status())
	}
	if out.String() != "thinking\ndone\n" {
		t.Errorf("out %q", out.String())
	}
	for _, want := range []string{"rm -rf build", "> ", "threadline: approved `rm -rf build` (by cli:t)"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("err lacks %q:\n%s", want, errOut.String())
		}
	}
}

// TestOneShotAskEndOfInputDeclines: input that ends before an answer declines.
func TestOneShotAskEndOfInputDeclines(t *testing.T) {
	s, chat := stack(t)
	got := make(chan agent.InteractionResponse, 1)
	s.Prov.Add(chatopstest.Asking("i1", "make", got, "ok"))
	var out, errOut lockedBuffer
	o := &console.OneShot{Bot: s.Bot, In: strings.NewReader(""), Out: &out, Err: &errOut, By: "cli:t", Ask: true}
	if _, err := o.Run(t.Context(), chat, "go"); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Decision != agent.DecisionDecline {
		t.Errorf("answer %+v", r)
	}
}

// TestOneShotInterrupt: a Ctrl-C press stops the run, which ends interrupted
// with a note on Err.
func TestOneShotInterrupt(t *testing.T) {
	s, chat := stack(t)
	release := make(chan struct{})
	defer close(release)
	s.Prov.Add(chatopstest.Gated(release, "partial"))
	presses := make(chan struct{}, 1)
	var out, errOut lockedBuffer
	o := &console.OneShot{Bot: s.Bot, Out: &out, Err: &errOut, Interrupts: presses, By: "cli:t"}
	go func() { // Ctrl-C once the text streamed (the run's end is the test's deadline)
		for out.String() != "partial" {
			time.Sleep(5 * time.Millisecond)
		}
		presses <- struct{}{}
	}()
	done := make(chan struct{})
	var status runhub.RunStatus
	go func() {
		defer close(done)
		run, err := o.Run(t.Context(), chat, "go")
		if err != nil {
			t.Error(err)
			return
		}
		status = run.Status()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not stop")
	}
	if status != runhub.StatusInterrupted || !strings.Contains(errOut.String(), "threadline: run interrupted") || out.String() != "partial\n" {
		t.Errorf("status %s, out %q, err %q", status, out.String(), errOut.String())
	}
}

// TestEventLine: payload fields join the envelope sorted; payload keys that
// would shadow the envelope are dropped; a payload that is not an object is
// an error.
func TestEventLine(t *testing.T) {
	ev := chatops.Event{ChatID: "c", Seq: 7, RunID: "r", Type: "x.y", At: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
		Payload: json.RawMessage(`{"z":1,"a":"b","seq":99,"type":"forged"}`)}
	b, err := console.EventLine(ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"x.y","seq":7,"chat_id":"c","run_id":"r","at":"2026-01-02T03:04:05Z","a":"b","z":1}` + "\n"
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	ev.Payload = json.RawMessage(`[1]`)
	if _, err := console.EventLine(ev); err == nil {
		t.Error("a non-object payload was accepted")
	}
}
