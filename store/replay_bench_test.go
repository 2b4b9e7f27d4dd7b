// Replay of a long chat with and without planner statistics (issue 19, target 5).

package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

const replayEvents = 100_000

// replayChat stores a chat of n events in a fresh store whose chat_events
// table autovacuum leaves alone, then gives it statistics (ANALYZE) or
// checks that it has none.
func replayChat(b *testing.B, dialect string, n int, analyze bool) *store.Store {
	b.Helper()
	s := storetest.Open(b, dialect)
	ctx := context.Background()
	if dialect == store.DialectPostgres {
		if _, err := s.DB().ExecContext(ctx, `ALTER TABLE chat_events SET (autovacuum_enabled = off)`); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.CreateChat(ctx, &store.Chat{ID: "long"}); err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"type":"assistant.delta","text":"a typical streamed delta of an answer, some forty bytes"}`)
	batch := make([]store.Event, 0, 1000)
	for seq := 1; seq <= n; seq++ {
		batch = append(batch, store.Event{ChatID: "long", Seq: int64(seq), RunID: agent.RunID(fmt.Sprintf("r%d", seq/100)), Type: "assistant.delta", Payload: payload})
		if len(batch) == cap(batch) || seq == n {
			if err := s.AppendEvents(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if analyze {
		if _, err := s.DB().ExecContext(ctx, `ANALYZE chat_events`); err != nil {
			b.Fatal(err)
		}
	}
	if dialect == store.DialectPostgres {
		var stats int
		if err := s.DB().GetContext(ctx, &stats, `SELECT count(*) FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'chat_events'`); err != nil {
			b.Fatal(err)
		}
		if analyze != (stats > 0) {
			b.Fatalf("chat_events has statistics of %d columns, want analyzed=%v", stats, analyze)
		}
	}
	return s
}

// BenchmarkReplay100k: a subscriber's replay of a 100,000-event chat from seq
// 0 (runhub.Hub.Subscribe, pages of 500 through Store.EventsAfter), on a table
// after ANALYZE and on a fresh one without statistics. "paged" reads the same
// pages from the store without the hub; "unbounded" pages with
// the query EventsAfter used before (seq > $2 ORDER BY seq LIMIT 500), which a
// planner without statistics turns into a sort of the rest of the chat per
// page.
func BenchmarkReplay100k(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		for _, stats := range []string{"analyzed", "nostats"} {
			b.Run(dialect+"/"+stats, func(b *testing.B) {
				s := replayChat(b, dialect, replayEvents, stats == "analyzed")
				b.Run("hub", func(b *testing.B) {
					h := runhub.New(s, nil, runhub.Options{})
					defer h.Close()
					for b.Loop() {
						ctx, cancel := context.WithCancel(context.Background())
						n := 0
						for e := range h.Subscribe(ctx, "long", 0) {
							n++
							if e.Seq == replayEvents {
								break
							}
						}
						cancel()
						if n != replayEvents {
							b.Fatalf("replayed %d of %d events", n, replayEvents)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/replay")
				})
				b.Run("paged", func(b *testing.B) {
					for b.Loop() {
						n, after := 0, int64(0)
						for {
							page, err := s.EventsAfter(context.Background(), "long", after, 500)
							if err != nil {
								b.Fatal(err)
							}
							n += len(page)
							if len(page) < 500 {
								break
							}
							after = page[len(page)-1].Seq
						}
						if n != replayEvents {
							b.Fatalf("read %d of %d events", n, replayEvents)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/replay")
				})
				b.Run("unbounded", func(b *testing.B) {
					q := s.DB().Rebind(`SELECT chat_id, seq, run_id, type, payload, created_at FROM chat_events
WHERE chat_id = ? AND seq > ? ORDER BY seq LIMIT 500`)
					for b.Loop() {
						n, after := 0, int64(0)
						for {
							var page []struct {
								ChatID  string  `db:"chat_id"`
								Seq     int64   `db:"seq"`
								RunID   *string `db:"run_id"`
								Type    string  `db:"type"`
								Payload *string `db:"payload"`
								At      any     `db:"created_at"`
							}
							if err := s.DB().SelectContext(context.Background(), &page, q, "long", after); err != nil {
								b.Fatal(err)
							}
							n += len(page)
							if len(page) < 500 {
								break
							}
							after = page[len(page)-1].Seq
						}
						if n != replayEvents {
							b.Fatalf("read %d of %d events", n, replayEvents)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/replay")
				})
			})
		}
	}
}
