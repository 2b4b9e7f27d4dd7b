package slack_test

import (
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func TestRendering(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		text := []string{"Streaming ", "natively ", "in ", "several ", "appends.\n\n", "```go\nfunc main() {}\n```"}
		want := strings.Join(text, "")
		mentionAndWait := func(t *testing.T, h *harness) (string, string) {
			t.Helper()
			root := h.fake.PostUserMessage("C1", "", "go")
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
				t.Fatal(err)
			}
			var body string
			chatopstest.WaitFor(t, "the final answer", func() bool {
				var ok bool
				_, body, ok = finalAnswer(t, h.fake, "C1", root)
				return ok
			})
			return root, body
		}
		slowly := func(h *harness) {
			h.stack.Prov.Add(chatopstest.Slow(text, 40*time.Millisecond))
		}

		t.Run("native streaming", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			slowly(h)
			_, body := mentionAndWait(t, h)
			if body != want {
				t.Fatalf("streamed %q, want %q", body, want)
			}
			starts := h.fake.Calls("chat.startStream")
			if len(starts) != 1 || starts[0].Form.Get("recipient_user_id") != "UALLOWED" || starts[0].Form.Get("recipient_team_id") == "" || starts[0].Form.Get("token") == "" {
				t.Fatalf("startStream calls %+v", starts)
			}
			if n := len(h.fake.Calls("chat.appendStream")); n == 0 {
				t.Fatal("no appendStream")
			}
			stops := h.fake.Calls("chat.stopStream")
			if len(stops) != 1 || !strings.Contains(stops[0].Form.Get("blocks"), "Done in") {
				t.Fatalf("stopStream calls %+v", stops)
			}
			for _, c := range h.fake.Calls("chat.update") {
				if c.Form.Get("ts") == starts[0].Form.Get("ts") {
					t.Fatal("the streamed message was also edited with chat.update")
				}
			}
		})

		t.Run("workspace without streaming falls back to edits", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			h.fake.DisableStreaming("not_allowed")
			slowly(h)
			if _, body := mentionAndWait(t, h); body != want {
				t.Fatalf("answer %q", body)
			}
			if len(h.fake.Calls("chat.update")) == 0 {
				t.Fatal("no chat.update after the stream was refused")
			}
		})

		t.Run("message_not_in_streaming_state falls back to chat.update", func(t *testing.T) {
			h := start(t, st, options{streaming: "auto"})
			h.fake.FailNext("chat.appendStream", 1, "message_not_in_streaming_state")
			slowly(h)
			if _, body := mentionAndWait(t, h); body != want {
				t.Fatalf("answer %q", body)
			}
			if len(h.fake.Calls("chat.update")) == 0 {
				t.Fatal("no chat.update after the stream ended")
			}
		})

		t.Run("429 with Retry-After", func(t *testing.T) {
			h := start(t, st, options{})
			h.fake.RateLimitNext("chat.update", 1, 1)
			slowly(h)
			started := time.Now()
			if _, body := mentionAndWait(t, h); body != want {
				t.Fatalf("answer %q", body)
			}
			if d := time.Since(started); d < time.Second {
				t.Fatalf("answered %s after a Retry-After of 1 s", d)
			}
			var limited time.Time
			for _, c := range h.fake.Calls("") {
				if c.Status == 429 {
					limited = c.At
					continue
				}
				if !limited.IsZero() && c.At.Sub(limited) < time.Second-50*time.Millisecond && c.Method != "chat.postEphemeral" {
					t.Fatalf("%s called %s after a 429 asking for 1 s", c.Method, c.At.Sub(limited))
				}
			}
		})

		t.Run("long answer: several messages, then a file", func(t *testing.T) {
			var long strings.Builder
			for i := range 1200 {
				long.WriteString("Paragraph ")
				long.WriteString(strings.Repeat("x", i%50))
				long.WriteString(".\n\n")
			}
			h := start(t, st, options{})
			h.stack.Prov.Add(chatopstest.Answer(long.String()))
			root, _ := mentionAndWait(t, h)
			files := h.fake.Files()
			chatopstest.WaitFor(t, "the upload", func() bool { files = h.fake.Files(); return len(files) == 1 })
			if string(files[0].Content) != long.String() || files[0].ThreadTS != root {
				t.Fatalf("uploaded %d bytes in thread %q", len(files[0].Content), files[0].ThreadTS)
			}
			n := 0
			for _, m := range h.fake.Thread("C1", root) {
				if b, _ := blockText(t, m); strings.HasPrefix(b, "Paragraph") {
					n++
				}
			}
			if n != 8 {
				t.Fatalf("%d answer messages, want 8", n)
			}
			// Every chat.postMessage and chat.update of the thread passed the
			// fake's size checks.
			mine := map[string]bool{}
			for _, m := range h.fake.Thread("C1", root) {
				mine[m.TS] = true
			}
			for _, c := range h.fake.Calls("") {
				// (agents.sessions.setStatus is refused once: the fake's app
				// has no agent sessions, and the bot finds that out.)
				if c.Error != "" && c.Method != "agents.sessions.setStatus" && (c.Form.Get("thread_ts") == root || mine[c.Form.Get("ts")]) {
					t.Fatalf("%s failed: %s", c.Method, c.Error)
				}
			}
		})
	})
}

func TestDeletedMessageIsPostedAgain(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	h := start(t, st, options{})
	h.stack.Prov.Add(chatopstest.Slow([]string{"one ", "two ", "three ", "four"}, 150*time.Millisecond))
	root := h.fake.PostUserMessage("C1", "", "go")
	if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "go")), 0); err != nil {
		t.Fatal(err)
	}
	var first string
	chatopstest.WaitFor(t, "the first rendering", func() bool {
		for _, m := range h.fake.Thread("C1", root) {
			if m.TS != root {
				first = m.TS
				return true
			}
		}
		return false
	})
	// Someone deletes the bot's message while it streams.
	h.fake.FailNext("chat.update", 1, "message_not_found")
	chatopstest.WaitFor(t, "the final answer", func() bool { _, b, ok := finalAnswer(t, h.fake, "C1", root); return ok && b == "one two three four" })
	m, _, _ := finalAnswer(t, h.fake, "C1", root)
	if m.TS == first {
		t.Fatalf("the final answer was not posted anew after message_not_found")
	}
}
