package store_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestHomeThreads: a person's home lists the threads of the workspace where
// they started runs: the chat running now first, then by their latest run,
// newest first; titled by the chat's title or else its first prompt; with
// the chat's latest run (whoever started it); not threads of another
// workspace or platform, nor threads where only others ran.
func TestHomeThreads(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		base := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
		thread := func(ch, ts string) store.ThreadRef {
			return store.ThreadRef{Platform: "slack", Workspace: "T1", Channel: ch, Thread: ts}
		}
		seqs := map[agent.ChatID]int64{}
		chat := func(id, title string, p store.ThreadRef) {
			c := store.Chat{ID: id, Title: title, Agent: "claude"}
			if err := s.CreateChat(ctx, &c); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.Bind(ctx, store.Binding{ThreadRef: p, ChatID: id, CreatedBy: "slack:U1"}); err != nil {
				t.Fatal(err)
			}
		}
		event := func(chatID agent.ChatID, typ string, payload any) {
			b, err := json.Marshal(payload)
			if err != nil {
				t.Fatal(err)
			}
			seqs[chatID]++
			if err := s.AppendEvents(ctx, []store.Event{{ChatID: chatID, Seq: seqs[chatID], Type: typ, Payload: b, At: time.Now()}}); err != nil {
				t.Fatal(err)
			}
		}
		run := func(id agent.RunID, chatID agent.ChatID, by string, minute int, end runhub.RunStatus) {
			if err := s.StartRun(ctx, runhub.RunRecord{ID: id, ChatID: chatID, Agent: "claude", StartedBy: by, StartedAt: base.Add(time.Duration(minute) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
			if end != "" {
				if err := s.FinishRun(ctx, id, end, nil, ""); err != nil {
					t.Fatal(err)
				}
			}
		}
		// a: U1's oldest, titled by its first prompt (the second is later).
		chat("a", "", thread("C1", "1.1"))
		event("a", chatlog.TypeRunStarted, chatlog.RunStarted{Type: "run.started", Agent: "claude"})
		event("a", chatlog.TypeUserMessage, chatlog.UserMessage{Text: "fix the build", By: "slack:U1"})
		event("a", chatlog.TypeUserMessage, chatlog.UserMessage{Text: "and the tests", By: "slack:U1"})
		run("a1", "a", "slack:U1", 1, runhub.StatusCompleted)
		// b: U1 ran it, then U2's run failed: U1's page shows U1's own
		// run, not what U2 did there since (U1 may have left the channel).
		chat("b", "Deploy", thread("C1", "2.2"))
		run("b1", "b", "slack:U1", 5, runhub.StatusCompleted)
		run("b2", "b", "slack:U2", 6, runhub.StatusFailed)
		// c: U1's run runs now, though it started before b's.
		chat("c", "", thread("D1", "3.3"))
		event("c", chatlog.TypeUserMessage, chatlog.UserMessage{Text: "long job", By: "slack:U1"})
		run("c1", "c", "slack:U1", 2, "")
		// d: only U2 ran there.
		chat("d", "Theirs", thread("C1", "4.4"))
		run("d1", "d", "slack:U2", 7, runhub.StatusCompleted)
		// e: U1's newest finished, in another workspace; f on Matrix.
		chat("e", "Elsewhere", store.ThreadRef{Platform: "slack", Workspace: "T2", Channel: "C9", Thread: "5.5"})
		run("e1", "e", "slack:U1", 9, runhub.StatusCompleted)
		chat("f", "Matrix", store.ThreadRef{Platform: "matrix", Channel: "!r", Thread: "$e"})
		run("f1", "f", "slack:U1", 10, runhub.StatusCompleted)
		// g: U1 interrupted, the newest of U1's in T1.
		chat("g", "Stopped one", thread("C2", "6.6"))
		run("g1", "g", "slack:U1", 8, runhub.StatusInterrupted)

		got, err := s.HomeThreads(ctx, "slack", "T1", "slack:U1", 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids, titles []string
		for _, h := range got {
			ids = append(ids, h.ChatID)
			titles = append(titles, h.Title)
		}
		if want := []string{"c", "g", "b", "a"}; !slices.Equal(ids, want) {
			t.Fatalf("home threads %v, want %v", ids, want)
		}
		if want := []string{"long job", "Stopped one", "Deploy", "fix the build"}; !slices.Equal(titles, want) {
			t.Errorf("titles %q, want %q", titles, want)
		}
		if h := got[0]; !h.Running() || !h.EndedAt.IsZero() || h.ThreadRef != thread("D1", "3.3") || !h.StartedAt.Equal(base.Add(2*time.Minute)) {
			t.Errorf("running thread %+v", h)
		}
		if h := got[2]; h.Running() || h.Status != runhub.StatusCompleted || !h.StartedAt.Equal(base.Add(5*time.Minute)) || h.EndedAt.IsZero() {
			t.Errorf("b should show U1's own completed run, not U2's failed one: %+v", h)
		}
		// U2's page shows U2's failed run in b.
		if theirs, err := s.HomeThreads(ctx, "slack", "T1", "slack:U2", 10); err != nil || len(theirs) != 2 || theirs[0].ChatID != "d" || theirs[1].Status != runhub.StatusFailed {
			t.Errorf("U2's home: %+v %v", theirs, err)
		}
		if h := got[1]; h.Status != runhub.StatusInterrupted {
			t.Errorf("g %+v", h)
		}
		// The limit applies after the running one is put first.
		if two, err := s.HomeThreads(ctx, "slack", "T1", "slack:U1", 2); err != nil || len(two) != 2 || two[0].ChatID != "c" || two[1].ChatID != "g" {
			t.Errorf("limit 2: %+v %v", two, err)
		}
		if none, err := s.HomeThreads(ctx, "slack", "T1", "slack:U3", 10); err != nil || len(none) != 0 {
			t.Errorf("a person without runs: %+v %v", none, err)
		}
		// The people whose home lists b: U2 (latest) then U1.
		if who, err := s.ThreadStarters(ctx, thread("C1", "2.2"), 10); err != nil || !slices.Equal(who, []string{"slack:U2", "slack:U1"}) {
			t.Errorf("starters of b: %q %v", who, err)
		}
		if who, err := s.ThreadStarters(ctx, thread("C1", "9.9"), 10); err != nil || len(who) != 0 {
			t.Errorf("starters of an unbound thread: %q %v", who, err)
		}
	})
}
