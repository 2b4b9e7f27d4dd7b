// Benchmark of the transcript on a long chat (issue 19, target 5).

package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// longChat stores a chat of n events on the dialect's store: turns of a
// prompt, reasoning, text, tool calls with output, and more text.
func longChat(tb testing.TB, dialect string, n int) (*store.Store, agent.ChatID) {
	tb.Helper()
	st := storetest.Open(tb, dialect)
	ctx := context.Background()
	chat := store.Chat{ID: "long", Agent: "claude"}
	if err := st.CreateChat(ctx, &chat); err != nil {
		tb.Fatal(err)
	}
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	turn := []struct {
		typ     string
		payload json.RawMessage
	}{
		{chatlog.TypeUserMessage, nil},
		{chatlog.TypeRunStarted, enc(chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude", Model: "opus"})},
		{string(agent.EventReasoningDelta), enc(agent.Event{Type: agent.EventReasoningDelta, Text: strings.Repeat("thinking ", 20)})},
		{string(agent.EventAssistantDelta), enc(agent.Event{Type: agent.EventAssistantDelta, Text: "Let me run the tests first. "})},
		{string(agent.EventToolStarted), enc(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Input: json.RawMessage(`{"command":"go test ./..."}`)}})},
		{string(agent.EventToolOutput), enc(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: strings.Repeat("ok  \tpkg\t0.1s\n", 30)})},
		{string(agent.EventToolCompleted), enc(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1"}})},
		{string(agent.EventAssistantDelta), enc(agent.Event{Type: agent.EventAssistantDelta, Text: "The tests pass now; "})},
		{string(agent.EventAssistantDelta), enc(agent.Event{Type: agent.EventAssistantDelta, Text: "the fix was a missing nil check. ü€"})},
		{string(agent.EventRunCompleted), enc(agent.Event{Type: agent.EventRunCompleted})},
	}
	batch := make([]runhub.Event, 0, 1000)
	for seq := 1; seq <= n; seq++ {
		e := turn[(seq-1)%len(turn)]
		if e.typ == chatlog.TypeUserMessage { // each prompt its own
			e.payload = enc(chatlog.UserMessage{Text: fmt.Sprintf("Please look at failing test %d and fix it.", seq), By: "slack:U1"})
		}
		batch = append(batch, runhub.Event{ChatID: agent.ChatID(chat.ID), Seq: int64(seq), RunID: agent.RunID(fmt.Sprintf("r%d", (seq-1)/len(turn))), Type: e.typ, Payload: e.payload})
		if len(batch) == cap(batch) || seq == n {
			if err := st.AppendEvents(ctx, batch); err != nil {
				tb.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return st, agent.ChatID(chat.ID)
}

// forwardTranscript is the transcript as it was built before it read
// backwards: the whole chat from seq 0 in pages of 1,000, folded forwards.
func forwardTranscript(ctx context.Context, h History, chatID agent.ChatID) (string, error) {
	var (
		f     chatlog.Fold
		after int64
	)
	for {
		evs, err := h.EventsAfter(ctx, chatID, after, 1000)
		if err != nil {
			return "", err
		}
		for _, ev := range evs {
			after = ev.Seq
			f.Add(ev.Type, ev.Payload)
		}
		if len(evs) < 1000 {
			return f.Transcript(), nil
		}
	}
}

// BenchmarkTranscript100k: the transcript of a session-less run's first
// prompt on a 100,000-event chat, on Postgres (TEST_DATABASE_URL) and SQLite;
// "backward" is the service's, "forward" the whole-chat read it replaced.
func BenchmarkTranscript100k(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			st, chatID := longChat(b, dialect, 100_000)
			s := &Service{history: st, log: slog.New(slog.DiscardHandler)}
			ctx := context.Background()
			want, err := forwardTranscript(ctx, st, chatID)
			if err != nil {
				b.Fatal(err)
			}
			if got, err := s.transcript(ctx, chatID); err != nil || got != want || len(got) < TranscriptLimit-4 {
				b.Fatalf("backward transcript (%d bytes, %v) differs from the forward one (%d bytes)", len(got), err, len(want))
			}
			b.Run("backward", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := s.transcript(ctx, chatID); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("forward", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := forwardTranscript(ctx, st, chatID); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// countingHistory counts the events read through it, either way.
type countingHistory struct {
	History
	read int
}

func (c *countingHistory) EventsBefore(ctx context.Context, chatID agent.ChatID, beforeSeq int64, limit int) ([]runhub.Event, error) {
	evs, err := c.History.EventsBefore(ctx, chatID, beforeSeq, limit)
	c.read += len(evs)
	return evs, err
}

func (c *countingHistory) EventsAfter(ctx context.Context, chatID agent.ChatID, afterSeq int64, limit int) ([]runhub.Event, error) {
	evs, err := c.History.EventsAfter(ctx, chatID, afterSeq, limit)
	c.read += len(evs)
	return evs, err
}

// TestTranscriptReadsBackwards: on a long chat the transcript is the one the
// whole chat folds to, read from the end only as far as the limit needs, with
// and without the excluded run.
func TestTranscriptReadsBackwards(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st, chatID := longChat(t, dialect, 3_000)
			h := &countingHistory{History: st}
			s := &Service{history: h, log: slog.New(slog.DiscardHandler)}
			want, err := forwardTranscript(t.Context(), st, chatID)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.transcript(t.Context(), chatID)
			if err != nil || got != want {
				t.Fatalf("transcript (%d bytes, %v) differs from the whole chat's (%d bytes)", len(got), err, len(want))
			}
			if h.read > 2000 {
				t.Errorf("read %d of 3000 events for %d bytes", h.read, len(got))
			}
			// The last run (the one being recovered) is left out.
			last := agent.RunID("r299")
			var f chatlog.Fold
			evs, _ := st.EventsAfter(t.Context(), chatID, 0, 10_000)
			for _, ev := range evs {
				if ev.RunID != last {
					f.Add(ev.Type, ev.Payload)
				}
			}
			if got, err := s.transcript(t.Context(), chatID, last); err != nil || got != f.Transcript() || got == want {
				t.Fatalf("transcript without %s: %v, equal to the full one: %v", last, err, got == want)
			}
		})
	}
}

// TestLoadReplayReadsFromTheEnd: a reattached run's persisted events are read
// backwards from the chat's last seq down to the run's prompt, not from seq 0,
// and are the same whether the run is the chat's last or an earlier one.
func TestLoadReplayReadsFromTheEnd(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			st, chatID := longChat(t, dialect, 3_000)
			for _, tt := range []struct {
				run        agent.RunID
				prompt     string
				atMostRead int
			}{
				{"r299", "Please look at failing test 2991 and fix it.", replayReadPage},
				{"r150", "Please look at failing test 1501 and fix it.", 2 * replayReadPage},
			} {
				h := &countingHistory{History: st}
				s := &Service{history: h, log: slog.New(slog.DiscardHandler)}
				rp, err := s.loadReplay(t.Context(), chatID, tt.run)
				if err != nil {
					t.Fatal(err)
				}
				left := 0
				for _, n := range rp.left {
					left += n
				}
				// Of a turn's ten events, the prompt and run.started are the service's own.
				if rp.prompt != tt.prompt || rp.n != 8 || left != 8 {
					t.Errorf("%s: prompt %q, %d events (%d keyed), want %q and 8", tt.run, rp.prompt, rp.n, left, tt.prompt)
				}
				if h.read > tt.atMostRead {
					t.Errorf("%s: read %d of 3000 events", tt.run, h.read)
				}
			}
		})
	}
}
