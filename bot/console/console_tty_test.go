//go:build linux

package console_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/bot/console/consoletest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
)

// terminal is a console running on a pseudo-terminal.
type terminal struct {
	*consoletest.PTY
	wait func() error // runConsole's
}

// onTerminal runs con over chat on a new pseudo-terminal (con's In and Out)
// and waits for its first prompt ("> ").
func onTerminal(t *testing.T, con *console.Console, chat agent.ChatID) *terminal {
	t.Helper()
	p := consoletest.Open(t)
	con.In, con.Out = p.Tty, p.Tty
	term := &terminal{PTY: p, wait: runConsole(t, con, chat)}
	p.Screen.Wait(t, "> ")
	return term
}

// quit types key (Ctrl-D or Ctrl-C) and waits for the console to end
// without an error.
func (p *terminal) quit(t *testing.T, key string) {
	t.Helper()
	p.Type(t, key)
	if err := p.wait(); err != nil {
		t.Fatal(err)
	}
}

// TestConsoleTerminal drives the chat on a pseudo-terminal: the line is
// edited with the arrow keys, a message typed during a turn is queued
// ("queued") and runs when the turn ends, Up recalls the history, which is
// kept mode 0600 in the history file; a spinner stands between Enter and
// the first token; Ctrl-D quits and gives the terminal back as it was.
func TestConsoleTerminal(t *testing.T) {
	s, chat := stack(t)
	first := make(chan struct{})
	release := make(chan struct{})
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		select { // nothing until the test saw the spinner
		case <-first:
		case <-ctx.Done():
			return nil
		}
		return chatopstest.Gated(release, "partial answer")(ctx, req, emit)
	}, chatopstest.Answer("second done"), chatopstest.Answer("again done"))
	hist := filepath.Join(t.TempDir(), "state", "chat_history")
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: hist}, chat)
	p.Type(t, "helo", consoletest.Left, "l", consoletest.Enter) // helo, ←, l: hello
	p.Screen.Wait(t, "thinking…")
	close(first)
	p.Screen.Wait(t, "partial answer")
	p.Type(t, "second", consoletest.Enter)
	p.Screen.Wait(t, "queued (1): second")
	close(release)
	p.Screen.Wait(t, "second done")
	p.Screen.Wait(t, "— done")
	p.Type(t, consoletest.Up, consoletest.Up, consoletest.Enter) // the line before the last: hello
	p.Screen.Wait(t, "again done")
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	if got := prompts(s.Prov); !slices.Equal(got, []string{"hello", "second", "hello"}) {
		t.Errorf("prompts %q", got)
	}
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "hello\nsecond\nhello\n" {
		t.Errorf("history %q", b)
	}
	if fi, err := os.Stat(hist); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v (%v)", fi.Mode(), err)
	}
	if fi, err := os.Stat(filepath.Dir(hist)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("history directory mode %v (%v)", fi.Mode(), err)
	}
	tio, err := unix.IoctlGetTermios(int(p.Tty.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON == 0 || tio.Lflag&unix.ECHO == 0 {
		t.Errorf("terminal left raw: lflag %#x", tio.Lflag)
	}
}

// TestConsoleTerminalCtrlC: at the line editor Ctrl-C stops the running turn
// and drops the queue; idle, it asks for a second press, which quits.
func TestConsoleTerminalCtrlC(t *testing.T) {
	s, chat := stack(t)
	release := make(chan struct{})
	defer close(release)
	s.Prov.Add(chatopstest.Gated(release, "working"))
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: "-"}, chat)
	p.Type(t, "go", consoletest.Enter)
	p.Screen.Wait(t, "working")
	p.Type(t, "later", consoletest.Enter)
	p.Screen.Wait(t, "queued (1): later")
	p.Type(t, consoletest.CtrlC)
	p.Screen.Wait(t, "Dropped 1 queued message(s).")
	p.Screen.Wait(t, "[stopped]")
	p.Type(t, consoletest.CtrlC)
	p.Screen.Wait(t, "press Ctrl-C again")
	p.quit(t, consoletest.CtrlC)
	if got := prompts(s.Prov); !slices.Equal(got, []string{"go"}) {
		t.Errorf("prompts %q", got)
	}
}

// TestConsoleTerminalStreamsAboveThePrompt: text that has not ended its line
// is drawn above the prompt and completed in place: the screen, played as a
// terminal shows it, holds the whole line once, then the footer, and the
// spinner is gone.
func TestConsoleTerminalStreamsAboveThePrompt(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Slow([]string{"Hel", "lo ", "wor", "ld"}, 10*time.Millisecond))
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: "-"}, chat)
	p.Type(t, "hi", consoletest.Enter)
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	rows := p.Screen.Rows(80)
	i := slices.Index(rows, "Hello world")
	if i < 0 || i+1 >= len(rows) || !strings.HasPrefix(rows[i+1], "— done") {
		t.Errorf("the screen:\n%s", strings.Join(rows, "\n"))
	}
	if slices.ContainsFunc(rows, func(r string) bool {
		return strings.Contains(r, "thinking") || strings.Contains(r, "Hel") && r != "Hello world"
	}) {
		t.Errorf("left on the screen:\n%s", strings.Join(rows, "\n"))
	}
}

// TestConsoleTerminalSecretAnswer: the answer to a secret question is typed
// masked (never on the screen), reaches the agent marked secret, and is not
// kept in the history.
func TestConsoleTerminalSecretAnswer(t *testing.T) {
	s, chat := stack(t)
	got := make(chan agent.InteractionResponse, 1)
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "q1", NativeID: []byte(`"q1"`), Kind: agent.KindQuestion,
			Questions: []agent.Question{{ID: "token", Text: "Your token?", Secret: true}}}})
		select {
		case r := <-req.Responses:
			got <- r
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "q1", Status: agent.StatusAnswered, By: r.By}})
		case <-ctx.Done():
		}
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "thanks"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	hist := filepath.Join(t.TempDir(), "chat_history")
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: hist}, chat)
	p.Type(t, "log in", consoletest.Enter)
	p.Screen.Wait(t, "Your token?")
	p.Screen.Wait(t, "? ")
	p.Type(t, "hunter2", consoletest.Enter)
	p.Screen.Wait(t, "thanks")
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	if r := <-got; r.Answers["token"] != "hunter2" || !r.Secret {
		t.Errorf("answer %+v", r)
	}
	if strings.Contains(p.Screen.String(), "hunter") {
		t.Errorf("the secret was echoed:\n%q", p.Screen.String())
	}
	if b, err := os.ReadFile(hist); err != nil || string(b) != "log in\n" {
		t.Errorf("history %q (%v)", b, err)
	}
}

// TestConsoleTerminalAfterTheEnd: once a turn's end is shown the prompt is
// idle again ("> "), although the run is not done yet (its process still
// exits): a message typed then is not announced as queued, and is sent as
// soon as the run is done; Ctrl-D then waits without a word.
func TestConsoleTerminalAfterTheEnd(t *testing.T) {
	s, chat := stack(t)
	hold := make(chan struct{})
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventAssistantDelta, Text: "first\n"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		<-hold // the run ends after its terminal event, as a CLI's exit does
		return nil
	}, chatopstest.Answer("second"))
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: "-"}, chat)
	p.Type(t, "one", consoletest.Enter)
	p.Screen.Wait(t, "— done")
	p.Screen.Wait(t, "> ")
	p.Type(t, "two", consoletest.Enter)
	p.Screen.Wait(t, "two")
	close(hold)
	p.Screen.Wait(t, "second")
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	if got := prompts(s.Prov); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("prompts %q", got)
	}
	if sc := p.Screen.String(); strings.Contains(sc, "queued") || strings.Contains(sc, "end of input") {
		t.Errorf("announced:\n%s", strings.Join(p.Screen.Rows(80), "\n"))
	}
}

// TestConsoleHistoryScrubbed: a secret value typed into the chat is masked
// in the history file (the agent still gets the line the prompt service
// scrubs on its own).
func TestConsoleHistoryScrubbed(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Answer("noted"))
	hist := filepath.Join(t.TempDir(), "state", "chat_history")
	const secret = "xoxb-1111-2222-secretvalue"
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: hist, Scrub: redact.New(secret).String}, chat)
	p.Type(t, "the token is "+secret, consoletest.Enter)
	p.Screen.Wait(t, "noted")
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	b, err := os.ReadFile(hist)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), secret) || !strings.HasPrefix(string(b), "the token is ") {
		t.Errorf("history %q", b)
	}
}

// TestConsoleTerminalQueue: /queue, typed while a turn runs, lists the
// messages waiting for it at once (not queued itself); /queue clear drops
// them and the turn goes on.
func TestConsoleTerminalQueue(t *testing.T) {
	s, chat := stack(t)
	release := make(chan struct{})
	s.Prov.Add(chatopstest.Gated(release, "working"), chatopstest.Answer("never"))
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: "-"}, chat)
	p.Type(t, "go", consoletest.Enter)
	p.Screen.Wait(t, "working")
	p.Type(t, "first later", consoletest.Enter)
	p.Screen.Wait(t, "queued (1): first later")
	p.Type(t, "second later", consoletest.Enter)
	p.Screen.Wait(t, "queued (2): second later")
	p.Type(t, "/queue", consoletest.Enter)
	p.Screen.Wait(t, "Queued (2), sent in this order when the turn ends:")
	p.Screen.Wait(t, "1. first later")
	p.Screen.Wait(t, "2. second later")
	p.Type(t, "/queue clear", consoletest.Enter)
	p.Screen.Wait(t, "Dropped 2 queued message(s); the running turn goes on")
	close(release)
	p.Screen.Wait(t, "— done")
	p.quit(t, consoletest.CtrlD)
	if got := prompts(s.Prov); !slices.Equal(got, []string{"go"}) {
		t.Errorf("prompts %q", got)
	}
}

// TestConsoleTerminalHomeEnd: Home and End move to the line's start and end
// as tmux, screen, the Linux console and PuTTY (ESC [ 1 ~, ESC [ 4 ~), rxvt
// (ESC [ 7 ~, ESC [ 8 ~), xterm in application mode (ESC O H, ESC O F) and
// in normal mode (ESC [ H, ESC [ F) send them: "b", Home, "a", End, "c" is
// "abc" with each.
func TestConsoleTerminalHomeEnd(t *testing.T) {
	keys := []struct{ name, home, end string }{
		{"tmux, screen, Linux console, PuTTY", "\x1b[1~", "\x1b[4~"},
		{"rxvt", "\x1b[7~", "\x1b[8~"},
		{"xterm application mode", "\x1bOH", "\x1bOF"},
		{"xterm", "\x1b[H", "\x1b[F"},
	}
	s, chat := stack(t)
	for range keys {
		s.Prov.Add(chatopstest.Answer("ok"))
	}
	p := onTerminal(t, &console.Console{Bot: s.Bot, By: "console:t", History: "-"}, chat)
	var want []string
	for i, k := range keys {
		if i > 0 { // the first prompt onTerminal waited for
			p.Screen.Wait(t, "> ")
		}
		// Typed one key at a time, as a person types: a sequence is one read.
		for _, key := range []string{"b", k.home, "a", k.end, fmt.Sprintf("c%d", i)} {
			p.Type(t, key)
			time.Sleep(20 * time.Millisecond)
		}
		p.Type(t, consoletest.Enter)
		p.Screen.Wait(t, "— done")
		want = append(want, fmt.Sprintf("abc%d", i))
	}
	p.quit(t, consoletest.CtrlD)
	if got := prompts(s.Prov); !slices.Equal(got, want) {
		t.Errorf("prompts %q, want %q", got, want)
	}
}
