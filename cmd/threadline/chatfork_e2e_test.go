package main

import (
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/store"
)

// TestChatForkEndToEnd: /fork in `threadline chat` with the REAL Claude Code
// CLI (which forks natively, --resume with --fork-session) against the
// scripted fake API: the console switches to a new chat whose first turn the
// API sees with the parent's conversation, in a session of its own; the
// parent's session is unchanged.
func TestChatForkEndToEnd(t *testing.T) {
	if !providertest.InNetns(t) {
		return
	}
	bin := fakeapi.FindClaude(t)
	dir := isolate(t)
	srv := fakeapi.New(t,
		fakeapi.When("RECALL", fakeapi.Text("The word ", "was alpha.")),
		fakeapi.When("REMEMBER", fakeapi.Text("Noted: ", "alpha.")),
		fakeapi.Text("Hello."),
	)
	cfg := e2eConfig(t, dir, bin, srv)
	inR, inW := io.Pipe()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() { done <- cmdChat(context.Background(), []string{"--config", cfg}, inR, &out, &errOut) }()
	seen := 0
	waitFor := func(s string) {
		t.Helper()
		deadline := time.Now().Add(providertest.Scale(60 * time.Second))
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
	send("REMEMBER the word alpha")
	waitFor("Noted: alpha.")
	waitFor("— done")
	send("/fork")
	waitFor("Forked chat ")
	waitFor("> ")
	send("RECALL the word")
	waitFor("The word was alpha.")
	waitFor("— done")
	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chat: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("chat did not end on end of input")
	}

	m := regexp.MustCompile(`Forked chat ([0-9a-f-]{36}) into a new chat ([0-9a-f-]{36})`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no fork line:\n%s", out.String())
	}
	parentID, forkID := m[1], m[2]
	reqs := srv.MessageRequests()
	var recall string
	for _, r := range reqs {
		if tr := r.Transcript(); strings.Contains(tr, "RECALL the word") {
			recall = tr
		}
	}
	if !strings.Contains(recall, "REMEMBER the word alpha") || !strings.Contains(recall, "Noted: alpha.") {
		t.Fatalf("the fork's turn lacks the parent's conversation:\n%s", recall)
	}
	if strings.Contains(recall, "<history>") {
		t.Errorf("claude forks natively, but the fork got the transcript:\n%s", recall)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "tl.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	parent, _ := st.GetChat(t.Context(), parentID)
	fork, _ := st.GetChat(t.Context(), forkID)
	if parent.Sessions["claude"] == "" || fork.Sessions["claude"] == "" || fork.Sessions["claude"] == parent.Sessions["claude"] ||
		fork.ForkSessions["claude"] != parent.Sessions["claude"] || fork.ForkPending || fork.ForkedFrom != parentID {
		t.Fatalf("parent %+v\nfork %+v", parent, fork)
	}
}
