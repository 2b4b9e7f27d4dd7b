// queue_test.go: the busy queue keeps everything a message carried, survives
// a restart, is listed and cleared, and a queued message can interrupt the
// running turn.

package chatops_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// busy starts a gated turn in the fixture's thread and returns its chat id.
func (f *fixture) busy(t *testing.T, release chan struct{}) agent.ChatID {
	t.Helper()
	f.prov.Add(chatopstest.Gated(release, "working"))
	if err := f.mention(t, "UALLOWED", "long job"); err != nil {
		t.Fatal(err)
	}
	chatID := f.chatOf(t, thread)
	waitFor(t, "the run to start", func() bool { _, ok := f.bot.Active(chatID); return ok })
	return chatID
}

// write sends a message from who in the fixture's thread.
func (f *fixture) write(t *testing.T, who, text string, files ...chatops.File) {
	t.Helper()
	err := f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, ID: fmt.Sprintf("1690000002.%06d", time.Now().UnixNano()%1e6),
		Sent: time.Now(), User: user(who), Text: text, Mentioned: true, Files: files})
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) posted(prefix string) *message {
	return f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Body, prefix) })
}

func stored(t *testing.T, st *store.Store) []store.QueuedPrompt {
	t.Helper()
	qs, err := st.QueuedPrompts(t.Context(), "slack")
	if err != nil {
		t.Fatal(err)
	}
	var out []store.QueuedPrompt
	for _, q := range qs {
		if q.ThreadRef.Thread == thread.Thread {
			out = append(out, q)
		}
	}
	return out
}

func TestBusyQueue(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x01binary")
	files := []chatops.File{
		{Name: "shot.png", MediaType: "image/png", Data: png},
		{Name: "notes.txt", MediaType: "text/plain", Data: []byte("remember the milk")},
	}
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("a queued message keeps its images, files and sender, is listed and survives a restart", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			release := make(chan struct{})
			chatID := f.busy(t, release)
			f.write(t, "UAPPROVER", "compare with this", files...)
			notice := f.posted("Queued (1 waiting)")
			if notice == nil || len(notice.view.Buttons) != 1 || !strings.HasPrefix(notice.view.Buttons[0].ID, chatops.ButtonRunNowPrefix) {
				t.Fatalf("queue notice %+v", notice)
			}
			qs := stored(t, st)
			if len(qs) != 1 {
				t.Fatalf("stored queue %+v", qs)
			}
			q := qs[0]
			if q.ChatID != string(chatID) || q.Sender != "slack:UAPPROVER" || q.MessageID == "" || q.Sent.IsZero() ||
				!strings.Contains(q.Text, "compare with this") || !strings.Contains(q.Text, "notes.txt") ||
				!slices.Equal(q.Files, []string{"notes.txt"}) || len(q.Images) != 1 || !bytes.Equal(q.Images[0].Data, png) ||
				q.Images[0].Name != "shot.png" || notice.view.Buttons[0].ID != chatops.ButtonRunNowPrefix+q.ID {
				t.Fatalf("stored prompt %+v", q)
			}
			f.write(t, "UALLOWED", "queue")
			list := f.posted("Queued in this thread (1)")
			if list == nil || !strings.Contains(list.view.Body, "<@UAPPROVER>: “compare with this…”") || !strings.Contains(list.view.Body, "(1 image, 1 file)") {
				t.Fatalf("queue listing %+v", list)
			}

			// Restart: the desk goes first (nothing drains), then the
			// service stops its run; a new process over the same store
			// resumes the platform and runs the queued message.
			place := thread
			if err := f.threads.Close(); err != nil {
				t.Fatal(err)
			}
			if err := f.svc.Shutdown(t.Context()); err != nil {
				t.Fatal(err)
			}
			if n := len(f.prov.Requests()); n != 1 {
				t.Fatalf("the old process ran %d prompts, want only the first", n)
			}
			g := setup(t, st, chatops.DeskOptions{})
			thread = place
			g.surf = f.surf // the platform keeps its messages across the restart
			g.threads.Attach("slack", g.surf)
			g.prov.Add(chatopstest.Answer("after the restart"))
			if err := g.threads.Resume(t.Context(), "slack"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the queued message to run in the new process", func() bool { return len(g.prov.Requests()) == 1 })
			req := g.prov.Requests()[0]
			if !strings.Contains(req.Prompt, "compare with this") || !strings.Contains(req.Prompt, "notes.txt") ||
				len(req.Images) != 1 || !bytes.Equal(req.Images[0].Data, png) || req.Images[0].MediaType != "image/png" {
				t.Fatalf("the restored run's request %+v", req)
			}
			waitFor(t, "the restored answer", func() bool {
				return g.find(thread, func(m *message) bool { return m.view.Body == "after the restart" && m.view.Footer != "" }) != nil
			})
			r, err := st.ListRuns(t.Context(), string(chatID))
			if err != nil || len(r) != 2 || r[0].StartedBy != "slack:UAPPROVER" && r[1].StartedBy != "slack:UAPPROVER" {
				t.Fatalf("runs %+v %v", r, err)
			}
			if left := stored(t, st); len(left) != 0 {
				t.Fatalf("a started prompt stayed queued: %+v", left)
			}
		})

		t.Run("queue clear drops the stored queue, the turn goes on", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			release := make(chan struct{})
			chatID := f.busy(t, release)
			f.write(t, "UALLOWED", "one")
			f.write(t, "UALLOWED", "two")
			if n := len(stored(t, st)); n != 2 || f.threads.Queued(chatID) != 2 {
				t.Fatalf("queued %d stored %d", f.threads.Queued(chatID), n)
			}
			f.write(t, "UALLOWED", "queue clear")
			if f.posted("Dropped 2 queued messages") == nil {
				t.Fatal("no clear notice")
			}
			if n := len(stored(t, st)); n != 0 || f.threads.Queued(chatID) != 0 {
				t.Fatalf("after clear: queued %d stored %d", f.threads.Queued(chatID), n)
			}
			if _, ok := f.bot.Active(chatID); !ok {
				t.Fatal("queue clear stopped the turn")
			}
			f.write(t, "UALLOWED", "queue")
			if f.posted("Nothing is queued in this thread.") == nil {
				t.Fatal("empty listing missing")
			}
			close(release)
			waitFor(t, "the run to end", func() bool { _, ok := f.bot.Active(chatID); return !ok })
			if n := len(f.prov.Requests()); n != 1 {
				t.Fatalf("%d runs after a cleared queue", n)
			}
		})

		t.Run("now N stops the turn and runs that message first", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			chatID := f.busy(t, make(chan struct{}))
			f.prov.Add(chatopstest.Answer("urgent done"), chatopstest.Answer("first done"))
			f.write(t, "UALLOWED", "first in line")
			f.write(t, "UAPPROVER", "urgent fix")
			f.write(t, "UALLOWED", "now 2")
			if f.posted("Stopping the running turn; the queued message “urgent fix” runs next.") == nil {
				t.Fatal("no run-now notice")
			}
			waitFor(t, "both queued messages to run", func() bool { return len(f.prov.Requests()) == 3 && f.threads.Queued(chatID) == 0 })
			reqs := f.prov.Requests()
			if !strings.HasSuffix(reqs[1].Prompt, "urgent fix") || !strings.HasSuffix(reqs[2].Prompt, "first in line") {
				t.Fatalf("order %q, %q", reqs[1].Prompt, reqs[2].Prompt)
			}
			runs, err := f.st.ListRuns(t.Context(), string(chatID))
			if err != nil || len(runs) < 1 {
				t.Fatal(err)
			}
			interrupted := slices.ContainsFunc(runs, func(r store.Run) bool { return r.Status == runhub.StatusInterrupted })
			if !interrupted {
				t.Fatalf("the running turn was not interrupted: %+v", runs)
			}
			f.write(t, "UALLOWED", "now 3")
			if f.posted("Nothing is queued in this thread.") == nil && f.posted("There is no queued message 3") == nil {
				t.Fatal("now on an empty queue said nothing")
			}
		})

		t.Run("the notice's button runs the message now, for allowed users only", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			chatID := f.busy(t, make(chan struct{}))
			f.prov.Add(chatopstest.Answer("pressed"))
			f.write(t, "UALLOWED", "press for me", chatops.File{Name: "pic.png", MediaType: "image/png", Data: png})
			notice := f.posted("Queued (1 waiting)")
			if notice == nil || len(notice.view.Buttons) != 1 {
				t.Fatalf("notice %+v", notice)
			}
			b := notice.view.Buttons[0]
			ref, err := chatops.DecodeRef(b.Value)
			if err != nil || ref.ChatID != chatID {
				t.Fatalf("button ref %+v %v", ref, err)
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("USTRANGER"), Button: b.ID, Ref: ref}); err == nil {
				t.Fatal("a stranger pressed run-now")
			}
			if _, ok := f.bot.Active(chatID); !ok || f.threads.Queued(chatID) != 1 {
				t.Fatal("a refused press changed the run or the queue")
			}
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UALLOWED"), Button: b.ID, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the pressed message to run", func() bool { return len(f.prov.Requests()) == 2 })
			req := f.prov.Requests()[1]
			if !strings.HasSuffix(req.Prompt, "press for me") || len(req.Images) != 1 || !bytes.Equal(req.Images[0].Data, png) {
				t.Fatalf("request %+v", req)
			}
			// The same button again: the message is no longer queued.
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UALLOWED"), Button: b.ID, Ref: ref}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the no-longer-queued notice", func() bool { return f.posted("That message is no longer queued.") != nil })
		})
	})
}

// TestQueueImagesWithoutRestart: a message queued behind a turn reaches the
// agent with its images when the turn ends (they were dropped before).
func TestQueueImagesWithoutRestart(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
	release := make(chan struct{})
	f.busy(t, release)
	f.prov.Add(chatopstest.Answer("seen"))
	f.write(t, "UALLOWED", "what is this", chatops.File{Name: "a.png", MediaType: "image/png", Data: []byte("img")})
	close(release)
	waitFor(t, "the queued run", func() bool { return len(f.prov.Requests()) == 2 })
	req := f.prov.Requests()[1]
	if len(req.Images) != 1 || string(req.Images[0].Data) != "img" || req.Images[0].MediaType != "image/png" {
		t.Fatalf("images %+v", req.Images)
	}
	if r := f.prov.Requests()[1]; r.Approval != agent.ApprovalAsk {
		t.Fatalf("approval %q", r.Approval)
	}
}
