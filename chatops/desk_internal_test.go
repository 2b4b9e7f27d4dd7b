// desk_internal_test.go: the thread actors: order within a thread,
// parallelism across threads, blocking backpressure, panic recovery, and
// actors that end when idle.

package chatops

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// noteSurface records ephemerals; the rest does nothing.
type noteSurface struct {
	mu    sync.Mutex
	notes []string
}

func (s *noteSurface) Post(context.Context, Place, View) (string, error) { return "1.1", nil }
func (s *noteSurface) Update(context.Context, Place, string, View) error { return nil }
func (s *noteSurface) Upload(context.Context, Place, string, string) (string, error) {
	return "1.2", nil
}
func (s *noteSurface) React(context.Context, Place, string, string) error { return nil }
func (s *noteSurface) Mention(q string) string                            { return q }
func (s *noteSurface) Ephemeral(_ context.Context, p Place, u User, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, p.String()+" "+u.Qualified()+" "+text)
	return nil
}

func (s *noteSurface) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.notes...)
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newTestDesk(t *testing.T) (*Desk, *noteSurface, *syncBuffer) {
	t.Helper()
	var logs syncBuffer
	d := NewDesk(nil, nil, nil, DeskOptions{}, slog.New(slog.NewJSONHandler(&logs, nil)))
	s := &noteSurface{}
	d.Attach("test", s)
	t.Cleanup(func() { _ = d.Close() })
	return d, s, &logs
}

func testPlace(thread string) Place {
	return Place{Platform: "test", Workspace: "W", Channel: "C", Thread: thread}
}

var testUser = User{Platform: "test", ID: "U1"}

// put queues f on the place's thread as a front-end's event would be.
func put(t *testing.T, d *Desk, p Place, f func(ctx context.Context, th *thread) error) {
	t.Helper()
	if err := d.enqueue(t.Context(), p, item{what: "test", user: testUser, run: f}, true); err != nil {
		t.Fatal(err)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDeskOrderWithinThread: the events of one thread run one at a time in
// the order they were put, each by the same actor's state.
func TestDeskOrderWithinThread(t *testing.T) {
	d, _, _ := newTestDesk(t)
	const n = 500
	var (
		mu      sync.Mutex
		got     []int
		running int
		overlap bool
	)
	for i := range n {
		put(t, d, testPlace("1.1"), func(context.Context, *thread) error {
			mu.Lock()
			running++
			overlap = overlap || running > 1
			got = append(got, i)
			mu.Unlock()
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		})
	}
	waitUntil(t, "every event", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == n })
	if overlap {
		t.Fatal("two events of one thread ran at once")
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("event %d ran as number %d: %v", v, i, got[:min(len(got), i+5)])
		}
	}
}

// TestDeskParallelAcrossThreads: a thread whose event waits does not hold up
// another thread's events.
func TestDeskParallelAcrossThreads(t *testing.T) {
	d, _, _ := newTestDesk(t)
	other := make(chan struct{})
	firstDone := make(chan struct{})
	put(t, d, testPlace("1.1"), func(ctx context.Context, _ *thread) error {
		defer close(firstDone)
		select {
		case <-other: // only another thread's actor can close it
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	put(t, d, testPlace("2.2"), func(context.Context, *thread) error { close(other); return nil })
	select {
	case <-firstDone:
	case <-time.After(30 * time.Second):
		t.Fatal("thread 2.2 waited for thread 1.1")
	}
}

// TestDeskBackpressure: a put on a full queue blocks and logs, TryPut
// refuses at once, and once the actor moves on every event runs: nothing is
// dropped.
func TestDeskBackpressure(t *testing.T) {
	d, _, logs := newTestDesk(t)
	p := testPlace("1.1")
	gate := make(chan struct{})
	var (
		mu  sync.Mutex
		ran []int
	)
	record := func(i int) func(context.Context, *thread) error {
		return func(context.Context, *thread) error {
			mu.Lock()
			defer mu.Unlock()
			ran = append(ran, i)
			return nil
		}
	}
	started := make(chan struct{})
	put(t, d, p, func(context.Context, *thread) error { close(started); <-gate; return nil })
	<-started
	for i := range ThreadQueueDepth {
		put(t, d, p, record(i))
	}
	if err := d.TryPut(Inbound{Message: &Message{Place: p, User: testUser}}); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("TryPut on a full queue = %v, want ErrQueueFull", err)
	}
	queued := make(chan error, 1)
	go func() {
		queued <- d.enqueue(context.Background(), p, item{what: "late", user: testUser, run: record(ThreadQueueDepth)}, true)
	}()
	waitUntil(t, "the backpressure log line", func() bool {
		return strings.Contains(logs.String(), "thread queue full, waiting for room (backpressure)")
	})
	select {
	case err := <-queued:
		t.Fatalf("a put on a full queue returned (%v) before there was room", err)
	default:
	}
	short, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if err := d.enqueue(short, p, item{what: "given up", run: record(-1)}, true); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a bounded put on a full queue = %v, want the deadline", err)
	}
	close(gate)
	if err := <-queued; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "every queued event", func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) == ThreadQueueDepth+1 })
	for i, v := range ran {
		if v != i {
			t.Fatalf("ran %v", ran)
		}
	}
}

// TestDeskPanic: a panicking event is logged with its stack, the person is
// told in the thread, a synchronous caller gets ErrPanic, and the thread's
// next event runs.
func TestDeskPanic(t *testing.T) {
	d, s, logs := newTestDesk(t)
	p := testPlace("1.1")
	err := d.call(t.Context(), p, testUser, "boom", func(context.Context, *thread) error {
		panic("a handler bug")
	})
	if !errors.Is(err, ErrPanic) {
		t.Fatalf("call = %v, want ErrPanic", err)
	}
	if d.Panics() != 1 {
		t.Fatalf("%d panics counted", d.Panics())
	}
	want := p.String() + " " + testUser.Qualified() + " " + FailureNote
	if notes := s.all(); len(notes) != 1 || notes[0] != want {
		t.Fatalf("notes %q, want %q", notes, want)
	}
	out := logs.String()
	if !strings.Contains(out, `"msg":"desk event handler panicked"`) || !strings.Contains(out, `"stack":"goroutine `) || !strings.Contains(out, "desk_internal_test.go") {
		t.Fatalf("the panic was not logged with its stack:\n%s", out)
	}
	ran := false
	if err := d.call(t.Context(), p, testUser, "next", func(context.Context, *thread) error { ran = true; return nil }); err != nil || !ran {
		t.Fatalf("the next event: ran %v, %v", ran, err)
	}
}

// TestDeskActorEndsWhenIdle: a thread with nothing live is forgotten once
// its queue is empty, and the next event starts a new actor.
func TestDeskActorEndsWhenIdle(t *testing.T) {
	d, _, _ := newTestDesk(t)
	for i := range 3 {
		p := testPlace(fmt.Sprintf("%d.1", i))
		if err := d.call(t.Context(), p, testUser, "x", func(context.Context, *thread) error { return nil }); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "idle threads forgotten", func() bool { return d.ThreadCount() == 0 })
	if err := d.call(t.Context(), testPlace("0.1"), testUser, "again", func(context.Context, *thread) error { return nil }); err != nil {
		t.Fatal(err)
	}
	_ = d.Close()
	if err := d.Put(t.Context(), Inbound{Message: &Message{Place: testPlace("0.1"), User: testUser}}); !errors.Is(err, ErrClosed) {
		t.Fatalf("Put after Close = %v, want ErrClosed", err)
	}
}
