package runhub_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// benchRunSeq keeps run ids unique across benchmark rounds.
var benchRunSeq atomic.Int64

const (
	benchChats   = 64
	benchWorkers = 256 // concurrent appenders, 4 per chat
)

// BenchmarkAppend compares the hub's group commit with one INSERT+commit per event
// on Postgres (TEST_DATABASE_URL), two ways: the hub itself with batches of one
// (hub-one-insert-per-event), and bare one-row AppendEvents calls that skip the
// hub (baseline; Postgres still groups the WAL flushes of concurrent commits).
// All use the same 256 concurrent appenders over 64 chats. p99-ms is the
// append-to-broadcast latency (Append returns after the broadcast; for the
// baseline, the one-row commit).
func BenchmarkAppend(b *testing.B) {
	if os.Getenv(storetest.EnvDatabaseURL) == "" {
		b.Skipf("%s not set; the append benchmark needs Postgres", storetest.EnvDatabaseURL)
	}
	s := storetest.Open(b, store.DialectPostgres)
	chats := make([]agent.ChatID, benchChats)
	for i := range chats {
		chats[i] = agent.ChatID(fmt.Sprintf("bench-%d", i))
	}
	createChats(b, s, chats...)
	payload := []byte(`{"type":"text","text":"hello from the benchmark, a typical streamed delta"}`)

	// hub runs the hub's append path with a batch cap: 0 is group commit, 1 is
	// one INSERT and commit per event through the same persist-then-broadcast path.
	hub := func(maxBatch int) func(b *testing.B) {
		return func(b *testing.B) {
			h := runhub.New(s, nil, runhub.Options{MaxBatch: maxBatch})
			defer h.Close()
			// One live subscriber per chat, so broadcast is part of the measurement.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			for _, c := range chats {
				ch := h.Subscribe(ctx, c, 1<<62)
				go func() {
					for range ch {
					}
				}()
			}
			// Runs hold their chat's lock, as they do in production (a hub reads
			// the last seq again for chats it holds no lock for).
			for i, c := range chats {
				l, err := h.Acquire(ctx, runhub.RunRecord{ID: agent.RunID(fmt.Sprintf("bench-run-%d-%d", benchRunSeq.Add(1), i)), ChatID: c})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = l.Release(context.Background(), runhub.StatusCompleted, nil, "") }()
			}
			run(b, func(ctx context.Context, chat agent.ChatID) error {
				_, err := h.Append(ctx, chat, "run", "text", payload)
				return err
			}, chats)
		}
	}
	b.Run("groupcommit", hub(0))
	// The hub without group commit: every event its own INSERT and commit.
	b.Run("hub-one-insert-per-event", hub(1))

	b.Run("baseline", func(b *testing.B) {
		seqs := make([]atomic.Int64, len(chats))
		index := map[agent.ChatID]int{}
		for i, c := range chats {
			last, err := s.LastSeq(context.Background(), c)
			if err != nil {
				b.Fatal(err)
			}
			seqs[i].Store(last)
			index[c] = i
		}
		run(b, func(ctx context.Context, chat agent.ChatID) error {
			i := index[chat]
			ev := runhub.Event{ChatID: chat, Seq: seqs[i].Add(1), RunID: "run", Type: "text", Payload: payload, At: time.Now()}
			return s.AppendEvents(ctx, []runhub.Event{ev})
		}, chats)
	})
}

// run spreads b.N appends over benchWorkers goroutines and reports throughput and
// p99 latency.
func run(b *testing.B, appendOne func(ctx context.Context, chat agent.ChatID) error, chats []agent.ChatID) {
	ctx := context.Background()
	var (
		next int64
		wg   sync.WaitGroup
		lat  = make([][]time.Duration, benchWorkers)
	)
	b.ResetTimer()
	start := time.Now()
	for w := range benchWorkers {
		chat := chats[w%len(chats)]
		wg.Go(func() {
			for atomic.AddInt64(&next, 1) <= int64(b.N) {
				t0 := time.Now()
				if err := appendOne(ctx, chat); err != nil {
					b.Error(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	p99 := all[min(len(all)-1, len(all)*99/100)]
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
	b.ReportMetric(0, "ns/op")
}
