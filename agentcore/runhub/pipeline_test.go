package runhub_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// gatedStore holds its first AppendEvents until gate is closed (entered is
// closed once it is held) and records the size of every committed batch.
type gatedStore struct {
	runhub.Store
	entered, gate chan struct{}
	once          sync.Once

	mu      sync.Mutex
	batches []int
}

func (g *gatedStore) AppendEvents(ctx context.Context, events []runhub.Event) error {
	g.once.Do(func() {
		close(g.entered)
		<-g.gate
	})
	if err := g.Store.AppendEvents(ctx, events); err != nil {
		return err
	}
	g.mu.Lock()
	g.batches = append(g.batches, len(events))
	g.mu.Unlock()
	return nil
}

// TestEnqueuePipelines: a run's reader queues its next events while the
// previous commit is still pending; they go into the next commit together, get
// seqs in the order queued, and each is broadcast only once it is stored.
func TestEnqueuePipelines(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		gs := &gatedStore{Store: s, entered: make(chan struct{}), gate: make(chan struct{})}
		h := newHub(t, gs, runhub.Options{})
		ctx := t.Context()
		ch := h.Subscribe(ctx, "c1", 0)
		const n = 100
		var (
			mu   sync.Mutex
			done []int64
		)
		record := func(e runhub.Event, err error) {
			if err != nil {
				t.Errorf("commit of %+v: %v", e, err)
			}
			mu.Lock()
			done = append(done, e.Seq)
			mu.Unlock()
		}
		if err := h.Enqueue(ctx, "c1", "r", "text", payload(0), record); err != nil {
			t.Fatal(err)
		}
		<-gs.entered // the first commit is pending and held
		for i := 1; i < n; i++ {
			// Returns although the commit before is not done.
			if err := h.Enqueue(ctx, "c1", "r", "text", payload(i), record); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case e := <-ch:
			t.Fatalf("event %d broadcast before its commit", e.Seq)
		default:
		}
		close(gs.gate)
		got := recv(t, ch, n)
		checkSeqs(t, got, 0)
		for i, e := range got {
			if string(e.Payload) != string(payload(i)) {
				t.Fatalf("seq %d has payload %s, want %s", e.Seq, e.Payload, payload(i))
			}
		}
		if err := h.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := make([]int64, n)
		for i := range want {
			want[i] = int64(i) + 1
		}
		if !slices.Equal(done, want) {
			t.Fatalf("done called for seqs %v, want 1..%d in order", done, n)
		}
		gs.mu.Lock()
		defer gs.mu.Unlock()
		if !slices.Equal(gs.batches, []int{1, n - 1}) {
			t.Fatalf("committed batches %v, want [1 %d]: the events queued during a commit go into the next", gs.batches, n-1)
		}
		stored, err := s.EventsAfter(ctx, "c1", 0, 2*n)
		if err != nil || len(stored) != n {
			t.Fatalf("stored %d events (%v), want %d", len(stored), err, n)
		}
	})
}

// TestEnqueueFailedCommit: a failed commit tells every queued event's callback,
// broadcasts none of them, and Release still waits for the queue.
func TestEnqueueFailedCommit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		createChats(t, s, "c1")
		fs := &flakyStore{Store: s}
		h := newHub(t, fs, runhub.Options{})
		ctx := t.Context()
		l, err := h.Acquire(ctx, runhub.RunRecord{ID: "r1", ChatID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		ch := h.Subscribe(ctx, "c1", 0)
		fs.fail.Store(true)
		var (
			mu     sync.Mutex
			failed int
		)
		for i := range 10 {
			err := h.Enqueue(ctx, "c1", "r1", "text", payload(i), func(_ runhub.Event, err error) {
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, errInjected) {
					failed++
				}
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Release(ctx, runhub.StatusFailed, nil, "store down"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if failed != 10 {
			t.Fatalf("%d of 10 callbacks told of the failure by Release", failed)
		}
		mu.Unlock()
		select {
		case e := <-ch:
			t.Fatalf("event %d of a failed commit broadcast", e.Seq)
		default:
		}
		fs.fail.Store(false)
		ev, err := h.Append(ctx, "c1", "r2", "text", payload(99))
		if err != nil || ev.Seq != 1 {
			t.Fatalf("append after the failed commits: seq %d, %v; want seq 1", ev.Seq, err)
		}
	})
}

// seqCountingStore counts the last-seq reads and holds its first
// AppendEvents until gate is closed.
type seqCountingStore struct {
	*store.Store
	entered, gate     chan struct{}
	once              sync.Once
	lastSeq, lastSeqs atomic.Int32
}

func (c *seqCountingStore) AppendEvents(ctx context.Context, events []runhub.Event) error {
	c.once.Do(func() {
		close(c.entered)
		<-c.gate
	})
	return c.Store.AppendEvents(ctx, events)
}

func (c *seqCountingStore) LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error) {
	c.lastSeq.Add(1)
	return c.Store.LastSeq(ctx, chatID)
}

func (c *seqCountingStore) LastSeqs(ctx context.Context, chatIDs []agent.ChatID) (map[agent.ChatID]int64, error) {
	c.lastSeqs.Add(1)
	return c.Store.LastSeqs(ctx, chatIDs)
}

// TestRunsStartingTogetherLoadSeqsOnce: the first events of twenty runs that
// start together (each chat's seq to be read again under its new lock) cost
// the writer one LastSeqs, not twenty round trips, and get the right seqs.
func TestRunsStartingTogetherLoadSeqsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		const runs = 20
		chats := []agent.ChatID{"held"}
		for i := range runs {
			chats = append(chats, agent.ChatID(fmt.Sprintf("c%d", i)))
		}
		createChats(t, s, chats...)
		for _, c := range chats[1:] {
			if err := s.AppendEvents(t.Context(), []runhub.Event{{ChatID: c, Seq: 1, Type: "old"}, {ChatID: c, Seq: 2, Type: "old"}}); err != nil {
				t.Fatal(err)
			}
		}
		cs := &seqCountingStore{Store: s, entered: make(chan struct{}), gate: make(chan struct{})}
		h := newHub(t, cs, runhub.Options{})
		ctx := t.Context()
		if err := h.Enqueue(ctx, "held", "", "text", nil, nil); err != nil {
			t.Fatal(err)
		}
		<-cs.entered // the writer is busy; the runs' first events queue up
		for i, c := range chats[1:] {
			run := agent.RunID(fmt.Sprintf("r%d", i))
			if _, err := h.Acquire(ctx, runhub.RunRecord{ID: run, ChatID: c}); err != nil {
				t.Fatal(err)
			}
			if err := h.Enqueue(ctx, c, run, "text", nil, nil); err != nil {
				t.Fatal(err)
			}
		}
		before := cs.lastSeq.Load()
		close(cs.gate)
		if err := h.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if n, one := cs.lastSeq.Load()-before, cs.lastSeqs.Load(); n != 0 || one != 1 {
			t.Fatalf("%d LastSeq and %d LastSeqs calls for %d chats, want 0 and 1", n, one, runs)
		}
		for _, c := range chats[1:] {
			if last, err := s.LastSeq(ctx, c); err != nil || last != 3 {
				t.Fatalf("chat %s: last seq %d (%v), want 3", c, last, err)
			}
		}
	})
}
