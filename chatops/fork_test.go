// fork_test.go: Chats.Fork, the one fork of every front-end (the console's
// /fork through Execute, threads' fork, `threadline run --fork`).

package chatops_test

import (
	"context"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestConsoleFork: /fork in the console switches to a new chat that carries
// the parent's conversation to its agent (the scripted one forks nothing
// natively: it gets the visible transcript) and leaves the parent as it was.
func TestConsoleFork(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		stack := chatopstest.NewStack(t, st, nil)
		parent, err := stack.Bot.NewChat(ctx, chatops.Chat{Agent: "fake", Cwd: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		stack.Prov.Add(chatopstest.Answer("Noted: alpha."), chatopstest.Answer("It was alpha."))
		r, err := stack.Bot.Send(ctx, chatops.Prompt{ChatID: parent.ID, Text: "remember the word alpha", By: "console"})
		if err != nil {
			t.Fatal(err)
		}
		<-r.Done()
		before, _ := st.GetChat(ctx, string(parent.ID))
		seq, _ := st.LastSeq(ctx, parent.ID)

		cmd, ok := chatops.ParseCommand("/fork")
		if !ok {
			t.Fatal("/fork is not a command")
		}
		res, err := stack.Bot.Execute(ctx, parent.ID, cmd)
		if err != nil || res.Chat == nil || res.Chat.ID == parent.ID || res.Chat.Agent != "fake" || res.Chat.Cwd != parent.Cwd ||
			!strings.Contains(res.Text, string(res.Chat.ID)) {
			t.Fatalf("/fork = %+v, %v", res, err)
		}
		r, err = stack.Bot.Send(ctx, chatops.Prompt{ChatID: res.Chat.ID, Text: "which word?", By: "console"})
		if err != nil {
			t.Fatal(err)
		}
		<-r.Done()
		reqs := stack.Prov.Requests()
		if got := reqs[1]; got.ResumeID != "" || !strings.Contains(got.Prompt, "remember the word alpha") ||
			!strings.Contains(got.Prompt, "Noted: alpha.") || !strings.HasSuffix(got.Prompt, "which word?") {
			t.Fatalf("the fork's request: resume %q, prompt %q", got.ResumeID, got.Prompt)
		}
		after, _ := st.GetChat(ctx, string(parent.ID))
		if after.Sessions["fake"] != before.Sessions["fake"] || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Fatalf("the parent changed: %+v, was %+v", after, before)
		}
		if n, _ := st.LastSeq(ctx, parent.ID); n != seq {
			t.Fatalf("the parent got events: seq %d, was %d", n, seq)
		}
		if _, err := stack.Bot.Fork(ctx, "no-such-chat"); err == nil {
			t.Fatal("forking a missing chat worked")
		}
	})
}

// TestStatusShowsReportedModel: `status` shows the model the agent reported
// in its latest run (stored with the run) beside the chat's own setting.
func TestStatusShowsReportedModel(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	ctx := t.Context()
	stack := chatopstest.NewStack(t, st, nil)
	c, err := stack.Bot.NewChat(ctx, chatops.Chat{Agent: "fake", Cwd: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stack.Prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1", Model: "fake-large-2"})
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	status := func() string {
		t.Helper()
		res, err := stack.Bot.Execute(ctx, c.ID, chatops.Command{Name: "status"})
		if err != nil {
			t.Fatal(err)
		}
		return res.Text
	}
	if s := status(); !strings.Contains(s, "model (default) ·") {
		t.Fatalf("status before any run: %q", s)
	}
	r, err := stack.Bot.Send(ctx, chatops.Prompt{ChatID: c.ID, Text: "hi", By: "console"})
	if err != nil {
		t.Fatal(err)
	}
	<-r.Done()
	if s := status(); !strings.Contains(s, "model (default) (the agent reports fake-large-2)") {
		t.Fatalf("status after the run: %q", s)
	}
}
