// desk.go: one owner per thread. Every inbound platform event (a message, a
// button click, a modal answer, a slash command) is put on its thread's
// bounded queue and handled, in order, by that thread's actor goroutine, the
// model being mautrix's Portal event loop (queueEvent, handleSingleEvent).
//
// The actor of a thread starts on the first event put for it and exits as
// soon as its queue is empty; the thread's state (its binding, its queue of
// prompts waiting for a busy chat, its renderer and pending cards) stays in
// the thread while any of it is live and is forgotten after. A put on a full
// queue blocks and logs (it never drops), so a front-end's reader waits and
// nothing it accepted is lost; TryPut does not wait. A panic in one event is
// recovered, logged with its stack and told to the person in the thread.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Desk limits.
const (
	// ThreadQueueDepth is how many events one thread's queue holds; a put
	// beyond it waits.
	ThreadQueueDepth = 64
	// eventTimeout bounds the handling of one event, so that a full queue
	// always moves on.
	eventTimeout = 5 * time.Minute
	// stillWaiting spaces the log lines of a put that waits for room.
	stillWaiting = 10 * time.Second
)

var (
	// ErrClosed is returned by a put after Close.
	ErrClosed = errors.New("chatops: desk closed")
	// ErrQueueFull is returned by TryPut when the thread's queue is full.
	ErrQueueFull = errors.New("chatops: thread queue full")
	// ErrPanic is returned by a synchronous handler whose event panicked.
	ErrPanic = errors.New("chatops: event handler panicked")
)

// FailureNote is what a person hears when handling their event panicked.
const FailureNote = "Something went wrong on my side while handling that (an internal error; the details are in the bot's log). Please try again, and tell the operator if it keeps happening."

// Inbound is one thing a person did on a platform, for the desk: exactly one
// of Message, Click, Answer and Slash is set.
type Inbound struct {
	Message *Message
	Click   *Click
	Answer  *Answer
	Slash   *SlashCommand
	// EventID, when set, is the platform's id of the delivery (Slack
	// event_id): it is recorded first and a repeat is dropped (FirstSeen).
	EventID string
}

// place and user of the event: its thread and the person told on failure.
func (in Inbound) origin() (Place, User, string, bool) {
	switch {
	case in.Message != nil:
		return in.Message.Place, in.Message.User, "message", true
	case in.Click != nil:
		return in.Click.Place, in.Click.User, "click", true
	case in.Answer != nil:
		return in.Answer.Place, in.Answer.User, "answer", true
	case in.Slash != nil:
		return in.Slash.Place, in.Slash.User, "slash command", true
	}
	return Place{}, User{}, "", false
}

// thread is one platform thread's state. The actor goroutine is the only one
// that handles the thread's events; mu guards what the renderer, the answer
// forms and the metrics read from their own goroutines.
type thread struct {
	place Place
	in    chan item

	// Guarded by Desk.mu.
	running bool // an actor goroutine serves in
	puts    int  // puts under way (the thread must not be forgotten)

	// Owned by the actor: the thread's binding once known.
	binding *Binding

	mu       sync.Mutex
	queue    []QueuedPrompt // prompts waiting for the chat's run to end (persisted, queue.go)
	retrying bool           // a retry of the drain is scheduled (the chat is busy elsewhere)
	follower *follower
	pending  map[cardKey]*agent.Interaction
	cardAt   map[cardKey]time.Time // when each pending request was made
	watching map[agent.RunID]bool  // runs whose end drains the queue
}

// cardKey names a pending interaction of a thread: its run and its id.
type cardKey struct {
	run agent.RunID
	id  agent.InteractionID
}

// idle reports whether the thread holds no live state (caller holds
// Desk.mu).
func (th *thread) idle() bool {
	th.mu.Lock()
	defer th.mu.Unlock()
	return !th.running && th.puts == 0 && len(th.in) == 0 && len(th.queue) == 0 &&
		(th.follower == nil || !th.follower.running) && len(th.pending) == 0 && len(th.watching) == 0
}

// item is one event on a thread's queue.
type item struct {
	what string
	user User
	run  func(ctx context.Context, th *thread) error
	// done, when set, receives the handler's error (a synchronous call).
	done chan error
}

// threadOf returns the place's thread, creating it (caller holds t.mu).
func (t *Desk) threadOf(p Place) *thread {
	th := t.threads[p]
	if th == nil {
		th = &thread{place: p, in: make(chan item, ThreadQueueDepth), pending: map[cardKey]*agent.Interaction{}, watching: map[agent.RunID]bool{}}
		t.threads[p] = th
	}
	return th
}

// lookThread returns the place's thread, creating it.
func (t *Desk) lookThread(p Place) *thread {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.threadOf(p)
}

// forget drops the thread when it holds nothing live.
func (t *Desk) forget(th *thread) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.threads[th.place] == th && th.idle() {
		delete(t.threads, th.place)
	}
}

// Put hands an event to its thread's actor and returns once it is queued:
// it waits (logging) while the thread's queue is full, and fails only when
// ctx ends first or the desk is closed. What the event leads to is told in
// the thread; the front-end forgets it.
func (t *Desk) Put(ctx context.Context, in Inbound) error {
	it, p, err := t.inboundItem(in)
	if err != nil {
		return err
	}
	return t.enqueue(ctx, p, it, true)
}

// TryPut is Put without the wait: it returns ErrQueueFull at once when the
// thread's queue is full (an HTTP delivery is then refused and retried).
func (t *Desk) TryPut(in Inbound) error {
	it, p, err := t.inboundItem(in)
	if err != nil {
		return err
	}
	return t.enqueue(context.Background(), p, it, false)
}

// inboundItem turns an inbound event into its queue item.
func (t *Desk) inboundItem(in Inbound) (item, Place, error) {
	p, u, what, ok := in.origin()
	if !ok {
		return item{}, Place{}, errors.New("chatops: an inbound event with nothing in it")
	}
	run := func(ctx context.Context, th *thread) error {
		if in.EventID != "" {
			first, err := t.store.FirstSeen(ctx, p.Platform, in.EventID)
			if err != nil {
				t.log.WarnContext(ctx, "dedup an inbound event", logkey.EventID, in.EventID, "err", err)
			} else if !first {
				t.log.InfoContext(ctx, "dropped a repeated event", logkey.EventID, in.EventID, logkey.Platform, p.Platform)
				return nil
			}
		}
		switch {
		case in.Message != nil:
			return t.handleMessage(ctx, th, *in.Message)
		case in.Click != nil:
			return t.handleClick(ctx, th, *in.Click)
		case in.Answer != nil:
			return t.handleAnswer(ctx, th, *in.Answer)
		}
		reply, err := t.handleSlash(ctx, *in.Slash)
		if reply != "" {
			if eerr := t.ephemeral(ctx, p, u, reply); eerr != nil {
				t.log.WarnContext(ctx, "slash command reply", "err", eerr)
			}
		}
		return err
	}
	return item{what: what, user: u, run: run}, p, nil
}

// call runs f as an event of the place's thread and waits for its result.
func (t *Desk) call(ctx context.Context, p Place, u User, what string, f func(ctx context.Context, th *thread) error) error {
	done := make(chan error, 1)
	if err := t.enqueue(ctx, p, item{what: what, user: u, run: f, done: done}, true); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// enqueue puts it on the place's queue, waiting for room when wait is set,
// and makes sure an actor serves the queue.
func (t *Desk) enqueue(ctx context.Context, p Place, it item, wait bool) error {
	t.mu.Lock()
	if t.base.Err() != nil {
		t.mu.Unlock()
		return ErrClosed
	}
	th := t.threadOf(p)
	th.puts++
	t.mu.Unlock()
	err := t.send1(ctx, th, it, wait)
	t.mu.Lock()
	th.puts--
	if err == nil && !th.running {
		th.running = true
		t.wg.Go(func() { t.loop(th) })
	}
	t.mu.Unlock()
	if err != nil {
		t.forget(th)
	}
	return err
}

// send1 puts it on th's queue: at once when there is room, else (wait)
// after logging that the queue is full, every stillWaiting while it stays so.
func (t *Desk) send1(ctx context.Context, th *thread, it item, wait bool) error {
	select {
	case th.in <- it:
		return nil
	default:
	}
	if !wait {
		t.log.WarnContext(ctx, "thread queue full, refusing the event", logkey.Place, th.place.String(), "depth", ThreadQueueDepth)
		return ErrQueueFull
	}
	since := time.Now()
	t.log.WarnContext(ctx, "thread queue full, waiting for room (backpressure)", logkey.Place, th.place.String(), "depth", ThreadQueueDepth)
	tick := time.NewTicker(stillWaiting)
	defer tick.Stop()
	for {
		select {
		case th.in <- it:
			t.log.InfoContext(ctx, "thread queue had room again", logkey.Place, th.place.String(), "waited", time.Since(since).Round(time.Millisecond))
			return nil
		case <-tick.C:
			t.log.WarnContext(ctx, "thread queue still full", logkey.Place, th.place.String(), "waited", time.Since(since).Round(time.Second))
		case <-ctx.Done():
			t.log.WarnContext(ctx, "gave up waiting for room in a thread queue", logkey.Place, th.place.String(), "err", ctx.Err())
			return ctx.Err()
		case <-t.base.Done():
			return ErrClosed
		}
	}
}

// loop is a thread's actor: it handles the queued events in order and exits
// when the queue is empty.
func (t *Desk) loop(th *thread) {
	for {
		select {
		case it := <-th.in:
			if t.base.Err() != nil {
				if it.done != nil {
					it.done <- ErrClosed
				}
				continue
			}
			t.handleSingle(th, it)
			continue
		default:
		}
		t.mu.Lock()
		if len(th.in) > 0 {
			t.mu.Unlock()
			continue
		}
		th.running = false
		t.mu.Unlock()
		t.forget(th)
		return
	}
}

// handleSingle handles one event under eventTimeout and the safety net: a
// panic is logged with its stack (key "stack") and the person is told in the
// thread; the next event runs.
func (t *Desk) handleSingle(th *thread, it item) {
	ctx, cancel := context.WithTimeout(t.base, eventTimeout)
	defer cancel()
	var err error
	defer func() {
		if r := recover(); r != nil {
			t.panics.Add(1)
			t.log.ErrorContext(ctx, "desk event handler panicked", "what", it.what, logkey.Place, th.place.String(),
				"panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			t.tellFailure(ctx, th.place, it.user)
			err = fmt.Errorf("%w: %s: %v", ErrPanic, it.what, r)
		}
		if it.done != nil {
			it.done <- err
			return
		}
		t.report(ctx, it.what, err)
	}()
	err = it.run(ctx, th)
}

// tellFailure shows FailureNote to the person in the thread.
func (t *Desk) tellFailure(ctx context.Context, p Place, u User) {
	defer func() {
		if r := recover(); r != nil {
			t.log.ErrorContext(ctx, "telling a user about a failure panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	if u.ID == "" || p.Channel == "" {
		return
	}
	if err := t.ephemeral(ctx, p, u, FailureNote); err != nil {
		t.log.WarnContext(ctx, "tell a user their event failed", logkey.Place, p.String(), logkey.User, u.Qualified(), "err", err)
	}
}

// report logs what an event's handler returned; refusals are not errors.
func (t *Desk) report(ctx context.Context, what string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, ErrForbidden):
		t.log.InfoContext(ctx, "refused", "what", what, "err", err)
	default:
		t.log.WarnContext(ctx, "desk event", "what", what, "err", err)
	}
}

// Panics counts the event handler panics the desk survived.
func (t *Desk) Panics() int64 { return t.panics.Load() }

// ThreadCount counts the threads whose state the desk holds (for tests and
// metrics).
func (t *Desk) ThreadCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.threads)
}
