package chatops_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// fakeWorkspaces records the ship actions and answers them as told.
type fakeWorkspaces struct {
	mu       sync.Mutex
	calls    []string
	conflict bool
}

func (w *fakeWorkspaces) note(s string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls = append(w.calls, s)
}

func (w *fakeWorkspaces) Diff(_ context.Context, id agent.ChatID) (chatops.BranchDiff, error) {
	w.note("diff")
	return chatops.BranchDiff{Branch: "threadline/fix-1a2b3c4d", Stat: "1 file changed, +1 \u22120", Patch: []byte("--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+hello\n")}, nil
}

func (w *fakeWorkspaces) Push(_ context.Context, id agent.ChatID, by chatops.Requester) (string, error) {
	w.note("push by " + by.User.Qualified())
	return "Pushed threadline/fix-1a2b3c4d.", nil
}

func (w *fakeWorkspaces) PR(_ context.Context, id agent.ChatID, title string, by chatops.Requester, link string) (string, error) {
	w.note("pr " + title + " " + link)
	return "Opened PR #1.", nil
}

func (w *fakeWorkspaces) Merge(_ context.Context, id agent.ChatID, by chatops.Requester) (string, error) {
	w.note("merge")
	if w.conflict {
		return "", &chatops.MergeConflict{Branch: "threadline/fix-1a2b3c4d", Base: "main", Files: []string{"a.go", "b.go"}}
	}
	return "Merged.", nil
}

func (w *fakeWorkspaces) Close(_ context.Context, id agent.ChatID, discard bool) (string, error) {
	if discard {
		w.note("close --discard")
	} else {
		w.note("close")
	}
	return "Removed.", nil
}

func (w *fakeWorkspaces) seen() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.calls, "|")
}

// TestShipCommands: in a chat's thread, `diff` (anyone who may run) posts
// the stat and uploads the diff as <branch>.diff; push, pr (with a title of
// several words), merge and close are for approvers only; a merge conflict
// becomes the agent's next turn, listing the files; the buttons under an
// answer run the same commands.
func TestShipCommands(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st, chatops.DeskOptions{})
		ws := &fakeWorkspaces{}
		f.bot.Workspaces = ws
		f.prov.Add(chatopstest.Answer("Hi."))
		if err := f.mention(t, "UALLOWED", "hello there"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the answer", func() bool {
			return f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "Hi.") }) != nil
		})

		if err := f.mention(t, "UALLOWED", "diff"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the diff file", func() bool {
			return f.find(thread, func(m *message) bool {
				return strings.Contains(m.upload, "+hello") && m.view.Body == "threadline-fix-1a2b3c4d.diff"
			}) != nil
		})
		if f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, "1 file changed") }) == nil {
			t.Error("no stat posted with the diff")
		}
		// A user who may run but not approve may not push.
		err := f.mention(t, "UALLOWED", "push")
		if !strings.Contains(ws.seen(), "diff") || strings.Contains(ws.seen(), "push") || err == nil {
			t.Fatalf("push by a non-approver: %v, calls %s", err, ws.seen())
		}
		for _, cmd := range []string{"push", "pr Fix the login form", "close --discard"} {
			if err := f.mention(t, "UAPPROVER", cmd); err != nil {
				t.Fatalf("%s: %v", cmd, err)
			}
		}
		if got := ws.seen(); got != "diff|push by slack:UAPPROVER|pr Fix the login form https://slack.com/archives/C1/p"+strings.ReplaceAll(thread.Thread, ".", "")+"|close --discard" {
			t.Fatalf("calls %s", got)
		}
		// A conflict goes back to the agent.
		ws.conflict = true
		f.prov.Add(chatopstest.Answer("Rebased."))
		if err := f.mention(t, "UAPPROVER", "merge"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the conflict turn", func() bool {
			reqs := f.prov.Requests()
			return len(reqs) == 2 && strings.Contains(reqs[1].Prompt, "conflicts in: a.go, b.go")
		})
		// The Push button under an answer is the push command.
		chatID := f.chatOf(t, thread)
		err = f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER"), Button: chatops.ButtonPush, Ref: chatops.Ref{ChatID: chatID}})
		if err != nil || !strings.HasSuffix(ws.seen(), "merge|push by slack:UAPPROVER") {
			t.Fatalf("the Push button: %v, calls %s", err, ws.seen())
		}
	})
}
