package runhub_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

func createChats(t testing.TB, s *store.Store, ids ...agent.ChatID) {
	t.Helper()
	for _, id := range ids {
		if err := s.CreateChat(context.Background(), &store.Chat{ID: string(id)}); err != nil {
			t.Fatalf("CreateChat(%s): %v", id, err)
		}
	}
}

func newHub(t testing.TB, st runhub.Store, opts runhub.Options) *runhub.Hub {
	t.Helper()
	h := runhub.New(st, nil, opts)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

func payload(i int) json.RawMessage { return json.RawMessage(fmt.Sprintf(`{"i":%d}`, i)) }

// recv reads n events from ch or fails after a timeout.
func recv(t *testing.T, ch <-chan runhub.Event, n int) []runhub.Event {
	t.Helper()
	out := make([]runhub.Event, 0, n)
	timeout := time.After(20 * time.Second)
	for len(out) < n {
		select {
		case e, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed after %d of %d events", len(out), n)
			}
			out = append(out, e)
		case <-timeout:
			t.Fatalf("timeout after %d of %d events", len(out), n)
		}
	}
	return out
}

// checkSeqs fails unless evs have seqs from+1, from+2, ... in order.
func checkSeqs(t *testing.T, evs []runhub.Event, from int64) {
	t.Helper()
	for i, e := range evs {
		if want := from + int64(i) + 1; e.Seq != want {
			t.Fatalf("event %d has seq %d, want %d", i, e.Seq, want)
		}
	}
}

func expectNothing(t *testing.T, ch <-chan runhub.Event, d time.Duration) {
	t.Helper()
	select {
	case e := <-ch:
		t.Fatalf("unexpected event %+v", e)
	case <-time.After(d):
	}
}

func TestConcurrentAppendsGapless(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const chats, writers, perWriter = 6, 4, 40
		ids := make([]agent.ChatID, chats)
		for i := range ids {
			ids[i] = agent.ChatID(fmt.Sprintf("c%d", i))
		}
		createChats(t, s, ids...)
		h := newHub(t, s, runhub.Options{MaxBatch: 16})
		var (
			mu   sync.Mutex
			seen = map[agent.ChatID]map[int64]bool{}
			wg   sync.WaitGroup
		)
		for _, chat := range ids {
			seen[chat] = map[int64]bool{}
		}
		for _, chat := range ids {
			for w := range writers {
				wg.Go(func() {
					for i := range perWriter {
						ev, err := h.Append(t.Context(), chat, "r", "text", payload(w*1000+i))
						if err != nil {
							t.Error(err)
							return
						}
						mu.Lock()
						if seen[chat][ev.Seq] {
							t.Errorf("chat %s: seq %d returned twice", chat, ev.Seq)
						}
						seen[chat][ev.Seq] = true
						mu.Unlock()
					}
				})
			}
		}
		wg.Wait()
		for _, chat := range ids {
			evs, err := s.EventsAfter(t.Context(), chat, 0, 10000)
			if err != nil {
				t.Fatal(err)
			}
			if len(evs) != writers*perWriter || len(seen[chat]) != writers*perWriter {
				t.Fatalf("chat %s: %d stored, %d returned, want %d", chat, len(evs), len(seen[chat]), writers*perWriter)
			}
			checkSeqs(t, evs, 0)
		}
	})
}

func TestSubscribeReplayThenLive(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1", "c2")
		h := newHub(t, s, runhub.Options{})
		ctx := t.Context()
		const n = 25
		var want []runhub.Event
		for i := range n {
			ev, err := h.Append(ctx, "c1", "r1", "text", payload(i))
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ev)
		}
		if _, err := h.Append(ctx, "c2", "", "other", nil); err != nil {
			t.Fatal(err)
		}
		for _, after := range []int64{0, 10, n} {
			t.Run(fmt.Sprintf("after %d", after), func(t *testing.T) {
				sctx, cancel := context.WithCancel(ctx)
				ch := h.Subscribe(sctx, "c1", after)
				got := recv(t, ch, len(want)-int(after))
				checkSeqs(t, got, after)
				for i, e := range got {
					w := want[int(after)+i]
					if e.Type != w.Type || e.RunID != w.RunID || string(e.Payload) != string(w.Payload) || !e.At.Equal(w.At) {
						t.Fatalf("replayed %+v, appended %+v", e, w)
					}
				}
				live, err := h.Append(ctx, "c1", "r1", "text", payload(999))
				if err != nil {
					t.Fatal(err)
				}
				got = recv(t, ch, 1)
				if got[0].Seq != live.Seq || string(got[0].Payload) != `{"i":999}` {
					t.Fatalf("live event %+v, want %+v", got[0], live)
				}
				want = append(want, live)
				expectNothing(t, ch, 50*time.Millisecond) // nothing of c2
				cancel()
				for range ch { // closed when ctx ends
				}
			})
		}
	})
}

func TestSubscribeDuringAppends(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		h := newHub(t, s, runhub.Options{SubscriberBuffer: 8})
		ctx := t.Context()
		const n = 600
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := range n {
				if _, err := h.Append(ctx, "c1", "r", "text", payload(i)); err != nil {
					t.Error(err)
					return
				}
			}
		})
		// Subscribers joining at different moments all see 1..n exactly once.
		var subs []<-chan runhub.Event
		for range 4 {
			subs = append(subs, h.Subscribe(ctx, "c1", 0))
			time.Sleep(5 * time.Millisecond)
		}
		for _, ch := range subs {
			checkSeqs(t, recv(t, ch, n), 0)
		}
		wg.Wait()
	})
}

func TestSlowSubscriberDoesNotBlock(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		h := newHub(t, s, runhub.Options{SubscriberBuffer: 4})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0) // never read until all appends are done
		const n = 300
		done := make(chan error, 1)
		go func() {
			for i := range n {
				if _, err := h.Append(ctx, "c1", "r", "text", payload(i)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("appends blocked by a subscriber that does not read")
		}
		got := recv(t, ch, n)
		checkSeqs(t, got, 0)
		for i, e := range got {
			if string(e.Payload) != string(payload(i)) {
				t.Fatalf("event %d payload %s", i, e.Payload)
			}
		}
		// And it rejoins live: more appends while it reads slowly.
		go func() {
			for i := range 50 {
				if _, err := h.Append(ctx, "c1", "r", "text", payload(n+i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		var more []runhub.Event
		for range 50 {
			more = append(more, recv(t, ch, 1)...)
			time.Sleep(time.Millisecond)
		}
		checkSeqs(t, more, n)
		expectNothing(t, ch, 50*time.Millisecond)
	})
}

func TestAcquire(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1", "c2")
		h := newHub(t, s, runhub.Options{Owner: "replica-a"})
		ctx := t.Context()
		l1, err := h.Acquire(ctx, runhub.RunRecord{ID: "r1", ChatID: "c1", Agent: "claude"})
		if err != nil {
			t.Fatal(err)
		}
		if id, ok := h.Running("c1"); !ok || id != "r1" {
			t.Fatalf("Running(c1) = %q, %v", id, ok)
		}
		if _, err := h.Acquire(ctx, runhub.RunRecord{ID: "r2", ChatID: "c1"}); !errors.Is(err, agent.ErrPromptAlreadyRunning) {
			t.Fatalf("second Acquire = %v, want ErrPromptAlreadyRunning", err)
		}
		if _, err := h.Acquire(ctx, runhub.RunRecord{ID: "r3", ChatID: "c2"}); err != nil {
			t.Fatalf("other chat: %v", err)
		}
		run, err := s.GetRun(ctx, "r1")
		if err != nil || run.Owner != "replica-a" || run.Status != runhub.StatusRunning {
			t.Fatalf("GetRun(r1) = %+v, %v", run, err)
		}
		if err := l1.Release(ctx, runhub.StatusCompleted, json.RawMessage(`{"out":1}`), ""); err != nil {
			t.Fatal(err)
		}
		if err := l1.Release(ctx, runhub.StatusFailed, nil, "again"); err != nil {
			t.Fatalf("second Release: %v", err)
		}
		if _, ok := h.Running("c1"); ok {
			t.Fatal("c1 still running after Release")
		}
		if run, _ := s.GetRun(ctx, "r1"); run.Status != runhub.StatusCompleted {
			t.Fatalf("r1 after Release: %+v", run)
		}
		l4, err := h.Acquire(ctx, runhub.RunRecord{ID: "r4", ChatID: "c1"})
		if err != nil {
			t.Fatalf("Acquire after Release: %v", err)
		}
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if err := l4.Release(cancelled, runhub.StatusInterrupted, nil, ""); err != nil {
			t.Fatalf("Release with a cancelled ctx: %v", err)
		}
		if run, _ := s.GetRun(ctx, "r4"); run.Status != runhub.StatusInterrupted {
			t.Fatalf("r4 after Release: %+v", run)
		}

		t.Run("store error frees the memory lock", func(t *testing.T) {
			if _, err := h.Acquire(ctx, runhub.RunRecord{ID: "r5", ChatID: "nochat"}); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Acquire(no chat) = %v", err)
			}
			if _, ok := h.Running("nochat"); ok {
				t.Fatal("memory lock kept after a store error")
			}
		})
	})
}

func TestAcquireTwoReplicas(t *testing.T) {
	for _, d := range storetest.Dialects {
		t.Run(d, func(t *testing.T) {
			u := storetest.URL(t, d)
			ctx := t.Context()
			var stores []*store.Store
			for range 2 {
				s, err := store.OpenAndMigrate(ctx, u, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				stores = append(stores, s)
			}
			createChats(t, stores[0], "c1")
			a := newHub(t, stores[0], runhub.Options{Owner: "a"})
			b := newHub(t, stores[1], runhub.Options{Owner: "b"})

			// Both replicas race for the chat; exactly one wins each round.
			for round := range 5 {
				var (
					wg    sync.WaitGroup
					wins  atomic.Int32
					lease = make(chan *runhub.Lease, 2)
				)
				for i, h := range []*runhub.Hub{a, b} {
					wg.Go(func() {
						l, err := h.Acquire(ctx, runhub.RunRecord{ID: agent.RunID(fmt.Sprintf("r%d-%d", round, i)), ChatID: "c1"})
						switch {
						case err == nil:
							wins.Add(1)
							lease <- l
						case !errors.Is(err, agent.ErrPromptAlreadyRunning):
							t.Errorf("Acquire: %v", err)
						}
					})
				}
				wg.Wait()
				if wins.Load() != 1 {
					t.Fatalf("round %d: %d replicas acquired the chat", round, wins.Load())
				}
				l := <-lease
				if err := l.Release(ctx, runhub.StatusCompleted, nil, ""); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// flakyStore fails AppendEvents while fail is set.
type flakyStore struct {
	runhub.Store
	fail atomic.Bool
}

var errInjected = errors.New("injected failure")

func (f *flakyStore) AppendEvents(ctx context.Context, events []runhub.Event) error {
	if f.fail.Load() {
		return errInjected
	}
	return f.Store.AppendEvents(ctx, events)
}

func TestBroadcastOnlyAfterPersist(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		fs := &flakyStore{Store: s}
		h := newHub(t, fs, runhub.Options{})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0)
		if _, err := h.Append(ctx, "c1", "r", "text", payload(1)); err != nil {
			t.Fatal(err)
		}
		if e := recv(t, ch, 1)[0]; e.Seq != 1 {
			t.Fatalf("first event %+v", e)
		}

		fs.fail.Store(true)
		for range 3 {
			if _, err := h.Append(ctx, "c1", "r", "text", payload(2)); !errors.Is(err, errInjected) {
				t.Fatalf("Append on a failing store = %v", err)
			}
		}
		expectNothing(t, ch, 100*time.Millisecond)
		if last, _ := s.LastSeq(ctx, "c1"); last != 1 {
			t.Fatalf("LastSeq = %d after failed appends", last)
		}

		fs.fail.Store(false)
		ev, err := h.Append(ctx, "c1", "r", "text", payload(3))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq != 2 {
			t.Fatalf("append after failure got seq %d, want 2 (reused)", ev.Seq)
		}
		if e := recv(t, ch, 1)[0]; e.Seq != 2 || string(e.Payload) != `{"i":3}` {
			t.Fatalf("live after failure %+v", e)
		}
	})
}

func TestCloseFlushes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		h := runhub.New(s, nil, runhub.Options{MaxBatch: 8})
		ctx := t.Context()
		sub := h.Subscribe(ctx, "c1", 0)
		var (
			wg sync.WaitGroup
			ok atomic.Int64
		)
		for range 8 {
			wg.Go(func() {
				for range 50 {
					_, err := h.Append(ctx, "c1", "", "text", nil)
					if errors.Is(err, runhub.ErrClosed) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					ok.Add(1)
				}
			})
		}
		time.Sleep(20 * time.Millisecond)
		if err := h.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		if last, _ := s.LastSeq(ctx, "c1"); last != ok.Load() {
			t.Fatalf("stored %d events, %d appends succeeded", last, ok.Load())
		}
		for range sub { // closed by Close
		}
		if _, err := h.Append(ctx, "c1", "", "text", nil); !errors.Is(err, runhub.ErrClosed) {
			t.Fatalf("Append after Close = %v", err)
		}
		if _, open := <-h.Subscribe(ctx, "c1", 0); open {
			t.Fatal("Subscribe after Close delivered")
		}
	})
}

// downStore is a store that does not answer while down is set: appends
// and reads fail as a connection refused would. lostAck stores the next
// append and then fails it, as a commit whose answer was lost.
type downStore struct {
	runhub.Store
	down    atomic.Bool
	lostAck atomic.Bool
}

var errDown = errors.New("dial tcp 127.0.0.1:5432: connect: connection refused")

func (d *downStore) AppendEvents(ctx context.Context, events []runhub.Event) error {
	if d.down.Load() {
		return errDown
	}
	if d.lostAck.CompareAndSwap(true, false) {
		if err := d.Store.AppendEvents(ctx, events); err != nil {
			return err
		}
		return errDown
	}
	return d.Store.AppendEvents(ctx, events)
}

func (d *downStore) EventsAfter(ctx context.Context, c agent.ChatID, after int64, limit int) ([]runhub.Event, error) {
	if d.down.Load() {
		return nil, errDown
	}
	return d.Store.EventsAfter(ctx, c, after, limit)
}

// TestOutageHeld: while the database does not answer, the events of a run
// are held, in order, and not broadcast; when it answers again they are
// stored and broadcast, none lost and none twice.
func TestOutageHeld(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		ds := &downStore{Store: s}
		var attempts atomic.Int32
		h := newHub(t, ds, runhub.Options{Sleep: func(time.Duration) {
			if attempts.Add(1) == 5 { // the database is back after 5 waits
				ds.down.Store(false)
			}
		}})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0)
		ds.down.Store(true)
		var done []error
		var mu sync.Mutex
		for i := range 10 {
			if err := h.Enqueue(ctx, "c1", "r", "text", payload(i), func(_ runhub.Event, err error) {
				mu.Lock()
				done = append(done, err)
				mu.Unlock()
			}); err != nil {
				t.Fatal(err)
			}
		}
		got := recv(t, ch, 10)
		for i, e := range got {
			if e.Seq != int64(i+1) || string(e.Payload) != fmt.Sprintf(`{"i":%d}`, i) {
				t.Fatalf("event %d after the outage: %+v", i, e)
			}
		}
		if err := h.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, err := range done {
			if err != nil {
				t.Fatalf("an append failed: %v", err)
			}
		}
		if attempts.Load() < 5 {
			t.Errorf("%d waits, want the outage ridden out", attempts.Load())
		}
		if last, _ := s.LastSeq(ctx, "c1"); last != 10 {
			t.Fatalf("LastSeq = %d, want 10", last)
		}
	})
}

// TestLostAnswerLanded: a commit that landed although its answer was lost
// is not stored twice and its events are broadcast once.
func TestLostAnswerLanded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		ds := &downStore{Store: s}
		h := newHub(t, ds, runhub.Options{Sleep: func(time.Duration) {}})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0)
		ds.lostAck.Store(true)
		ev, err := h.Append(ctx, "c1", "r", "text", payload(1))
		if err != nil || ev.Seq != 1 {
			t.Fatalf("Append = %+v, %v", ev, err)
		}
		if ev2, err := h.Append(ctx, "c1", "r", "text", payload(2)); err != nil || ev2.Seq != 2 {
			t.Fatalf("next Append = %+v, %v", ev2, err)
		}
		if got := recv(t, ch, 2); got[0].Seq != 1 || got[1].Seq != 2 {
			t.Fatalf("broadcast %+v", got)
		}
		expectNothing(t, ch, 50*time.Millisecond)
	})
}

// TestOutageLimit: a database that stays away past OutageLimit fails the
// appends with ErrStoreUnavailable, and nothing is broadcast.
func TestOutageLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		ds := &downStore{Store: s}
		ds.down.Store(true)
		h := newHub(t, ds, runhub.Options{OutageLimit: time.Millisecond, Sleep: func(time.Duration) { time.Sleep(time.Millisecond) }})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0)
		if _, err := h.Append(ctx, "c1", "r", "text", payload(1)); !errors.Is(err, runhub.ErrStoreUnavailable) || !errors.Is(err, errDown) {
			t.Fatalf("Append = %v", err)
		}
		expectNothing(t, ch, 50*time.Millisecond)
	})
}
