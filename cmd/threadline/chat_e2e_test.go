package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// syncBuffer is a bytes.Buffer safe for one writer and a polling reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// e2eConfig writes a config running the real Claude Code against srv.
func e2eConfig(t *testing.T, dir, bin string, srv *fakeapi.Server) string {
	t.Helper()
	cfg := map[string]any{
		"database": map[string]any{"url": filepath.Join(dir, "tl.db")},
		"host":     map[string]any{"isolation": "off"}, // isolation is TestRunIsolatedEndToEnd's subject
		"agents": map[string]any{"claude": map[string]any{
			"bin": bin,
			"env": srv.ClaudeEnv(filepath.Join(dir, "claude-home")),
		}},
	}
	raw, _ := yaml.Marshal(cfg)
	p := filepath.Join(dir, "threadline.yaml")
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestChatEndToEnd types into `threadline chat` with the real Claude Code CLI
// behind it: streamed text, an approval answered at the prompt, Ctrl-C stopping a
// turn without quitting, /new, and Ctrl-D.
func TestChatEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	srv := fakeapi.New(t,
		fakeapi.When("TOOL", fakeapi.ToolUse("Bash", map[string]any{"command": "touch approved.txt && echo approved-run", "description": "Create approved.txt"})),
		fakeapi.When("SLOW", fakeapi.Slow(200, 50*time.Millisecond)),
		fakeapi.Text("Hello", " from", " the fake", " API."),
	)
	cfg := e2eConfig(t, dir, bin, srv)

	inR, inW := io.Pipe()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- cmdChat(context.Background(), []string{"--config", cfg}, inR, &out, &errOut) }()

	seen := 0
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if i := strings.Index(out.String()[seen:], s); i >= 0 {
				seen += i + len(s)
				return
			}
			select {
			case err := <-done:
				t.Fatalf("chat ended early (%v) waiting for %q:\n%s\nstderr: %s", err, s, out.String(), errOut.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
		t.Fatalf("timed out waiting for %q:\n%s\nstderr: %s", s, out.String(), errOut.String())
	}
	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}

	waitFor("new chat")
	waitFor("> ")
	send("say hello")
	waitFor("Hello from the fake API.")
	waitFor("— done")

	send("TOOL please")
	waitFor("[y] approve")
	send("y")
	waitFor("approved")
	waitFor("Tool result: approved-run")
	waitFor("— done")

	send("SLOW")
	waitFor("word02")
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitFor("[stopped]")
	waitFor("> ")

	send("/status")
	waitFor("idle")
	send("/new")
	waitFor("New chat")
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("chat did not end on end of input")
	}

	// Reopening the first chat shows where it left off.
	m := regexp.MustCompile(`new chat ([0-9a-f-]{36})`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no chat id in %q", out.String())
	}
	var again bytes.Buffer
	if err := cmdChat(context.Background(), []string{"--config", cfg, "--chat", m[1]}, strings.NewReader(""), &again, &errOut); err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Logf("reopened:\n%s", again.String())
	for _, want := range []string{"continuing chat " + m[1], "… earlier in this chat:", "you: say hello", "agent: Hello from the fake API.", "you: SLOW"} {
		if !strings.Contains(again.String(), want) {
			t.Errorf("the reopened chat lacks %q:\n%s", want, again.String())
		}
	}
}
