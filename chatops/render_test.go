package chatops_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/render"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestRenderer(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("replay renders the same as live", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Let me look.\n"})
				time.Sleep(60 * time.Millisecond)
				emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Edit", Summary: "Edit: main.go", Input: []byte(`{"file_path":"main.go"}`)}})
				emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Edit"}})
				emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t2", Name: "Bash", Summary: "Bash: go test"}})
				emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t2", Name: "Bash", IsError: true}})
				time.Sleep(60 * time.Millisecond)
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "Fixed main.go."})
				emit(agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 10, OutputTokens: 5}})
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			if err := f.mention(t, "UALLOWED", "fix it"); err != nil {
				t.Fatal(err)
			}
			var live *message
			waitFor(t, "the answer", func() bool {
				live = f.find(thread, func(m *message) bool { return m.view.Footer != "" })
				return live != nil
			})
			if !strings.Contains(live.view.Footer, "1 file changed") {
				t.Errorf("footer %q", live.view.Footer)
			}
			chatID := f.chatOf(t, thread)
			evs, err := st.EventsAfter(t.Context(), chatID, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			views := render.RenderRun(agent.ChatID(chatID), "proj", chatops.RenderOptions{Mention: f.surf.Mention}, evs)
			if len(views) != 1 || views[0].View.Hash() != live.view.Hash() {
				t.Fatalf("replayed view differs from the live one\nreplay %+v\nlive   %+v", views, live.view)
			}
			// A step list was shown while running.
			sawSteps := false
			for _, h := range live.history {
				if strings.Contains(strings.Join(h.Steps, "\n"), "✗ Bash: go test") {
					sawSteps = true
				}
			}
			if !sawSteps {
				t.Errorf("no step list in %d renderings", len(live.history))
			}
		})

		t.Run("restart edits the same message and posts nothing twice", func(t *testing.T) {
			f1 := setup(t, st, chatops.DeskOptions{})
			hang := make(chan struct{})
			f1.prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "partial answer"})
				<-hang // the process "dies": nothing more is persisted
				return nil
			})
			if err := f1.mention(t, "UALLOWED", "long"); err != nil {
				t.Fatal(err)
			}
			var first *message
			waitFor(t, "the partial answer", func() bool {
				first = f1.find(thread, func(m *message) bool { return m.view.Body == "partial answer" })
				return first != nil
			})
			f1.threads.Close()
			f1.hub.Close()
			close(hang)
			posts := len(f1.surf.inThread(thread))
			place := thread

			f2 := setup(t, st, chatops.DeskOptions{})
			f2.threads.Attach("slack", f1.surf)
			if err := f2.threads.Resume(t.Context(), "slack"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the interrupted footer on the same message", func() bool {
				m := f1.find(place, func(m *message) bool { return m.id == first.id })
				return strings.Contains(m.view.Footer, "Stopped") && strings.Contains(m.view.Footer, "restarted")
			})
			if n := len(f1.surf.inThread(place)); n != posts {
				t.Fatalf("%d messages after the restart, %d before", n, posts)
			}
			// A third start finds nothing open and sends nothing (the second
			// process stops first: its renderer may still be tidying up).
			f2.threads.Close()
			calls := f1.surf.callCount()
			f3 := setup(t, st, chatops.DeskOptions{})
			f3.threads.Attach("slack", f1.surf)
			if err := f3.threads.Resume(t.Context(), "slack"); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			if n := f1.surf.callCount(); n != calls {
				f1.surf.mu.Lock()
				late := append([]string(nil), f1.surf.calls[calls:]...)
				f1.surf.mu.Unlock()
				t.Fatalf("%d calls after a resume with nothing open: %q", n-calls, late)
			}
		})

		t.Run("long answers split, huge ones are uploaded", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{Render: chatops.RenderOptions{PartLimit: 300, MaxParts: 3}})
			var full strings.Builder
			full.WriteString("Intro paragraph.\n\n```sh\n")
			for i := range 100 {
				fmt.Fprintf(&full, "echo line %02d\n", i)
			}
			full.WriteString("```\n\nThe end.")
			text := full.String()
			var chunks []string
			for i := 0; i < len(text); i += 37 {
				chunks = append(chunks, text[i:min(i+37, len(text))])
			}
			f.prov.Add(chatopstest.Answer(chunks...))
			if err := f.mention(t, "UALLOWED", "long"); err != nil {
				t.Fatal(err)
			}
			parts := render.Split(text, 300)
			var up *message
			waitFor(t, "the upload and every part", func() bool {
				up = f.find(thread, func(m *message) bool { return m.upload != "" })
				for i := range 3 {
					if f.find(thread, func(m *message) bool { return strings.HasPrefix(m.view.Body, parts[i]) }) == nil {
						return false
					}
				}
				return up != nil && f.find(thread, func(m *message) bool { return m.view.Footer != "" }) != nil
			})
			if up.upload != text {
				t.Fatalf("uploaded %q", up.upload)
			}
			for _, m := range f.surf.inThread(thread) {
				if strings.Count(m.view.Body, "```")%2 != 0 {
					t.Fatalf("broken fence in %q", m.view.Body)
				}
			}
		})

		t.Run("a 429 pauses the workspace for Retry-After", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{})
			f.surf.mu.Lock()
			f.surf.limitNext, f.surf.retryAfter = 1, 300*time.Millisecond
			f.surf.mu.Unlock()
			f.prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "after"})
				time.Sleep(100 * time.Millisecond)
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: " the limit"})
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			start := time.Now()
			if err := f.mention(t, "UALLOWED", "go"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the answer", func() bool {
				return f.find(thread, func(m *message) bool { return m.view.Body == "after the limit" && m.view.Footer != "" }) != nil
			})
			if d := time.Since(start); d < 300*time.Millisecond {
				t.Fatalf("answered %s after a 429 asking for 300ms", d)
			}
			if s := f.threads.Stats("slack", "T1"); s.RateLimited != 1 {
				t.Fatalf("stats %+v", s)
			}
		})

		t.Run("deltas coalesce into few edits", func(t *testing.T) {
			f := setup(t, st, chatops.DeskOptions{Render: chatops.RenderOptions{PartLimit: 1 << 20}, Budget: chatops.Budget{MinInterval: 100 * time.Millisecond,
				Update: chatops.Rate{PerMinute: 1200, Burst: 2}, Post: chatops.Rate{PerMinute: 600, Burst: 5}}})
			var want strings.Builder
			for i := range 1000 {
				fmt.Fprintf(&want, "w%d ", i)
			}
			f.prov.Add(func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				for i := range 1000 {
					s := fmt.Sprintf("w%d ", i)
					emit(agent.Event{Type: agent.EventAssistantDelta, Text: s})
					time.Sleep(time.Millisecond)
				}
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			})
			start := time.Now()
			if err := f.mention(t, "UALLOWED", "stream"); err != nil {
				t.Fatal(err)
			}
			var ans *message
			waitFor(t, "the answer", func() bool {
				ans = f.find(thread, func(m *message) bool { return m.view.Footer != "" })
				return ans != nil
			})
			took := time.Since(start)
			if ans.view.Body != want.String() {
				t.Fatal("final text differs")
			}
			limit := int(took/(100*time.Millisecond)) + 3
			if calls := ans.edits + 1; calls > limit {
				t.Fatalf("%d calls for one message in %s (limit %d)", calls, took, limit)
			}
		})
	})
}

func TestPartsPostedInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		f := setup(t, st, chatops.DeskOptions{Render: chatops.RenderOptions{PartLimit: 100, MaxParts: 20}})
		var text strings.Builder
		for i := range 60 {
			fmt.Fprintf(&text, "Line %02d of a long answer.\n\n", i)
		}
		// One delta: every part appears at once.
		f.prov.Add(chatopstest.Answer(text.String()))
		if err := f.mention(t, "UALLOWED", "long"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the answer", func() bool { return f.find(thread, func(m *message) bool { return m.view.Footer != "" }) != nil })
		var got strings.Builder
		for _, m := range f.surf.inThread(thread) {
			if strings.HasPrefix(m.view.Body, "Line") {
				got.WriteString(m.view.Body)
			}
		}
		if got.String() != text.String() {
			t.Fatalf("parts out of order:\n%s", got.String())
		}
	})
}
