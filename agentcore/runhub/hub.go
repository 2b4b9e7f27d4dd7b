// Package runhub keeps one run per chat and fans chat events out to subscribers.
//
// Persist, then broadcast: Append hands the event to a single writer goroutine that
// assigns the chat's next seq, commits whatever is queued (group commit, one
// Store.AppendEvents per batch), and only then broadcasts the batch in seq order
// and completes the waiting Appends. A failed commit fails every Append of the
// batch, broadcasts nothing and reloads the seqs, so the next append reuses them.
//
// Pipelining: Enqueue is Append without the wait, so that a run streams at the
// rate of the writer's commits, not of one commit round trip per event: while
// one batch commits, the run's next events queue up for the next one. Order and
// persist-before-broadcast are those of Append; Sync (and Lease.Release) waits
// for what was queued.
//
// Subscribe replays stored events from a seq and then follows live ones without
// gaps or duplicates. A slow subscriber never blocks the writer: when its bounded
// buffer is full it falls back to reading the store from its last delivered seq
// and rejoins the live stream afterwards.
//
// The run lock is taken in memory first and then in the store (StartRun), whose
// unique index decides between replicas sharing one database.
//
// Replicas: several hubs over one database may write to one chat over time (its
// runs land on different replicas; a survivor appends run.interrupted for a dead
// replica's run). The (chat, seq) key refuses a second writer of a seq, and a hub
// trusts its cached seq of a chat only while it holds the chat's run lock, taken
// after the lock was acquired; otherwise it reads the last seq from the store. Two
// hubs appending to one chat at the same moment is what the database's
// one-running-run-per-chat lock prevents; were it to happen, the loser's batch
// fails (and every other chat's events of that batch with it) and nothing is
// stored twice.
//
// The package is provider-neutral and imports only the standard library and
// agentcore/agent.
package runhub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("runhub: hub closed")

// ErrStoreFull is wrapped by the store's error when its disk is full: the
// batch fails at once (no wait would free the space) and the run is stopped.
var ErrStoreFull = errors.New("the database's disk is full")

// ErrStoreUnavailable is the error of the appends of a batch the store
// could not take for Options.OutageLimit: their events are not stored and
// were never broadcast.
var ErrStoreUnavailable = errors.New("runhub: the database was unreachable")

// Defaults for Options.
const (
	DefaultMaxBatch = 256
	// DefaultSubscriberBuffer holds two full batches of one chat: a pipelined
	// run's commit then fits a subscriber that keeps reading, instead of
	// sending it to the store to catch up.
	DefaultSubscriberBuffer = 2 * DefaultMaxBatch

	commitTimeout = 30 * time.Second
	replayPage    = 500

	// DefaultOutageLimit is how long a commit is retried while the store
	// does not answer: a database restart or failover takes seconds.
	DefaultOutageLimit = 2 * time.Minute
	// retryFirst and retryMax bound the wait between two attempts.
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
	// finishRetry and finishFor pace and bound the background retries of a
	// run's end (Lease.Release).
	finishRetry = 5 * time.Second
	finishFor   = time.Hour
	// conflictAttempts is how many times a commit the store refuses while
	// it answers (a conflict, a constraint) is tried before it fails.
	conflictAttempts = 3
)

// Options tune a Hub. Zero values pick the defaults.
type Options struct {
	// MaxBatch caps the events of one commit (default 256) and the writer's
	// queue.
	MaxBatch int
	// MaxDelay, when positive, lets the writer wait up to this long for more
	// events before committing a batch that is not full. Zero commits whatever is
	// queued as soon as the previous commit finished.
	MaxDelay time.Duration
	// SubscriberBuffer is the live buffer of each subscriber (default 512). A
	// subscriber that falls further behind catches up from the store.
	SubscriberBuffer int
	// Owner is the replica id recorded on runs whose RunRecord has none.
	Owner string
	// Persisted, when set, is told of every committed batch (for metrics).
	Persisted func(events int, took time.Duration)
	// OutageLimit is how long a batch the store cannot take is retried,
	// with backoff, before its appends fail with ErrStoreUnavailable
	// (default 2 min). Meanwhile the events wait, in order, unbroadcast;
	// appenders block once the writer's queue is full.
	OutageLimit time.Duration
	// Sleep waits between attempts (tests); nil: time.Sleep. Close waits
	// for a batch being retried.
	Sleep func(time.Duration)
}

// Hub owns the run locks and the event stream of all chats of one replica.
type Hub struct {
	st     Store
	logger *slog.Logger
	opts   Options

	mu      sync.Mutex
	running map[agent.ChatID]agent.RunID // chat id -> run id
	stale   map[agent.ChatID]struct{}    // chats whose cached seq predates their lock

	closeMu    sync.RWMutex
	closed     bool
	reqs       chan *appendReq
	writerDone chan struct{}
	seqs       map[agent.ChatID]int64 // last committed seq per chat; owned by the writer

	subMu sync.RWMutex
	subs  map[agent.ChatID]map[*subscriber]struct{}

	outage atomic.Bool // a batch is being retried: the store did not answer

	baseCtx    context.Context // cancelled by Close; ends subscriptions
	baseCancel context.CancelFunc
	subWG      sync.WaitGroup
}

type appendReq struct {
	ev Event
	// Exactly one of done, queued or barrier says how the outcome is told.
	done    chan error         // Append waits on it
	queued  func(Event, error) // Enqueue's callback, may be nil
	barrier bool               // Sync: no event, done once the batches before it are
}

// finish tells the request's outcome. It never blocks.
func (r *appendReq) finish(err error) {
	switch {
	case r.done != nil:
		r.done <- err
	case r.queued != nil:
		r.queued(r.ev, err)
	}
}

type subscriber struct {
	buf    chan Event
	wake   chan struct{}
	lagged atomic.Bool
}

// New returns a Hub over st and starts its writer goroutine. Call Close to stop it.
func New(st Store, logger *slog.Logger, opts Options) *Hub {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.SubscriberBuffer <= 0 {
		opts.SubscriberBuffer = DefaultSubscriberBuffer
	}
	if opts.OutageLimit <= 0 {
		opts.OutageLimit = DefaultOutageLimit
	}
	if opts.Sleep == nil {
		opts.Sleep = time.Sleep
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		st:      st,
		logger:  logger,
		opts:    opts,
		running: map[agent.ChatID]agent.RunID{},
		stale:   map[agent.ChatID]struct{}{},
		// One batch queued behind the one committing: appenders beyond that
		// wait, which bounds append->broadcast to about two commits.
		reqs:       make(chan *appendReq, opts.MaxBatch),
		writerDone: make(chan struct{}),
		seqs:       map[agent.ChatID]int64{},
		subs:       map[agent.ChatID]map[*subscriber]struct{}{},
		baseCtx:    ctx,
		baseCancel: cancel,
	}
	go h.writer()
	return h
}

// Close commits the appends already queued, stops the writer and ends all
// subscriptions. It is safe to call more than once.
func (h *Hub) Close() error {
	h.closeMu.Lock()
	if h.closed {
		h.closeMu.Unlock()
		<-h.writerDone
		return nil
	}
	h.closed = true
	close(h.reqs)
	h.closeMu.Unlock()
	<-h.writerDone
	h.baseCancel()
	h.subWG.Wait()
	return nil
}

// Lease is a held run lock. Release it exactly once the run ended; further calls
// do nothing.
type Lease struct {
	hub  *Hub
	run  RunRecord
	once sync.Once
}

// Run returns the record the lease was acquired with.
func (l *Lease) Run() RunRecord { return l.run }

// Acquire takes the chat's run lock, in memory and then in the store. A busy chat
// (in this hub, or in the database for another replica) is an error wrapping
// agent.ErrPromptAlreadyRunning. When the store fails, the memory lock is released.
func (h *Hub) Acquire(ctx context.Context, run RunRecord) (*Lease, error) {
	if run.ID == "" || run.ChatID == "" {
		return nil, errors.New("runhub: acquire: run id and chat id are required")
	}
	if run.Owner == "" {
		run.Owner = h.opts.Owner
	}
	if run.StartedAt.IsZero() {
		run.StartedAt = time.Now().UTC()
	}
	h.mu.Lock()
	if cur, busy := h.running[run.ChatID]; busy {
		h.mu.Unlock()
		return nil, fmt.Errorf("runhub: chat %s has run %s: %w", run.ChatID, cur, agent.ErrPromptAlreadyRunning)
	}
	h.running[run.ChatID] = run.ID
	h.stale[run.ChatID] = struct{}{}
	h.mu.Unlock()
	if err := h.st.StartRun(ctx, run); err != nil {
		h.unlock(run.ChatID, run.ID)
		return nil, fmt.Errorf("runhub: start run %s: %w", run.ID, err)
	}
	return &Lease{hub: h, run: run}, nil
}

func (h *Hub) unlock(chatID agent.ChatID, runID agent.RunID) {
	h.mu.Lock()
	if h.running[chatID] == runID {
		delete(h.running, chatID)
	}
	h.mu.Unlock()
}

// Running reports the run holding the chat's lock in this hub.
func (h *Hub) Running(chatID agent.ChatID) (runID agent.RunID, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	runID, ok = h.running[chatID]
	return runID, ok
}

// Release waits for the events queued before it (Sync), records the run's
// terminal status (FinishRun) and then frees the chat. FinishRun runs even when
// ctx is already cancelled (bounded by a timeout). The memory lock is freed even
// when FinishRun fails; that error is returned. Only the first call does
// anything.
func (l *Lease) Release(ctx context.Context, status RunStatus, usage json.RawMessage, errText string) error {
	var err error
	l.once.Do(func() {
		defer l.hub.unlock(l.run.ChatID, l.run.ID)
		// The lock must be recorded as released even when the run was cancelled.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
		defer cancel()
		// The run's pipelined events land before its end; a closed hub has
		// committed them already.
		_ = l.hub.Sync(ctx)
		if ferr := l.hub.st.FinishRun(ctx, l.run.ID, status, usage, errText); ferr != nil {
			err = fmt.Errorf("runhub: finish run %s: %w", l.run.ID, ferr)
			l.hub.finishLater(l.run, status, usage, errText)
		}
	})
	return err
}

// finishLater retries FinishRun in the background (every finishRetry, for
// finishFor, until Close): a run whose end could not be recorded (a full
// disk, an outage) would otherwise keep its chat's run lock in the
// database, and the chat could take no prompt until a restart.
func (h *Hub) finishLater(run RunRecord, status RunStatus, usage json.RawMessage, errText string) {
	h.subWG.Go(func() {
		t := time.NewTicker(finishRetry)
		defer t.Stop()
		for end := time.Now().Add(finishFor); time.Now().Before(end); {
			select {
			case <-h.baseCtx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(h.baseCtx, commitTimeout)
			err := h.st.FinishRun(ctx, run.ID, status, usage, errText)
			cancel()
			if err == nil {
				h.logger.Info("runhub: a run's end recorded late", logkey.RunID, run.ID, logkey.ChatID, run.ChatID)
				return
			}
		}
		h.logger.Error("runhub: a run's end could not be recorded; its chat stays locked until a restart", logkey.RunID, run.ID, logkey.ChatID, run.ChatID)
	})
}

// Append stores one event of the chat with the chat's next seq and returns it once
// it is committed and broadcast. If ctx ends while the commit is pending, Append
// returns ctx's error; the event may still be stored and broadcast.
func (h *Hub) Append(ctx context.Context, chatID agent.ChatID, runID agent.RunID, typ string, payload json.RawMessage) (Event, error) {
	r, err := newReq(chatID, runID, typ, payload)
	if err != nil {
		return Event{}, err
	}
	r.done = make(chan error, 1)
	if err := h.queue(ctx, r); err != nil {
		return Event{}, err
	}
	select {
	case err := <-r.done:
		if err != nil {
			return Event{}, fmt.Errorf("runhub: append to chat %s: %w", chatID, err)
		}
		return r.ev, nil
	case <-ctx.Done():
		return Event{}, fmt.Errorf("runhub: append to chat %s: %w", chatID, ctx.Err())
	}
}

// Enqueue queues one event of the chat as Append does but returns as soon as it
// is queued, without waiting for its commit: a run's reader goes on reading
// while the writer commits what it queued before (pipelining; the writer takes
// all that is queued into its next commit). The events one goroutine queues, by
// Enqueue or Append, get seqs and are committed and broadcast in the order it
// queued them, and none is broadcast before it is committed. done, when not nil,
// is called from the writer goroutine with the event (its seq set) and the
// commit's error once the commit is over; it must not block. Enqueue blocks only
// while the writer's queue is full; it fails, without calling done, when ctx
// ends first or the hub is closed. Sync waits for what was queued.
func (h *Hub) Enqueue(ctx context.Context, chatID agent.ChatID, runID agent.RunID, typ string, payload json.RawMessage, done func(Event, error)) error {
	r, err := newReq(chatID, runID, typ, payload)
	if err != nil {
		return err
	}
	r.queued = done
	return h.queue(ctx, r)
}

// Sync returns once every event queued before it is committed (or failed) and
// broadcast.
func (h *Hub) Sync(ctx context.Context) error {
	r := &appendReq{barrier: true, done: make(chan error, 1)}
	if err := h.queue(ctx, r); err != nil {
		return err
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runhub: sync: %w", ctx.Err())
	}
}

func newReq(chatID agent.ChatID, runID agent.RunID, typ string, payload json.RawMessage) (*appendReq, error) {
	if chatID == "" || typ == "" {
		return nil, errors.New("runhub: append: chat id and type are required")
	}
	if len(payload) == 0 {
		payload = nil
	}
	// Microseconds: what Postgres keeps, so live and replayed events are equal.
	return &appendReq{ev: Event{ChatID: chatID, RunID: runID, Type: typ, Payload: payload, At: time.Now().UTC().Truncate(time.Microsecond)}}, nil
}

// queue hands r to the writer.
func (h *Hub) queue(ctx context.Context, r *appendReq) error {
	h.closeMu.RLock()
	defer h.closeMu.RUnlock()
	if h.closed {
		return ErrClosed
	}
	select {
	case h.reqs <- r:
		return nil
	case <-ctx.Done():
		if r.barrier {
			return fmt.Errorf("runhub: sync: %w", ctx.Err())
		}
		return fmt.Errorf("runhub: append to chat %s: %w", r.ev.ChatID, ctx.Err())
	}
}

// writer is the single goroutine that assigns seqs and commits.
func (h *Hub) writer() {
	defer close(h.writerDone)
	batch := make([]*appendReq, 0, h.opts.MaxBatch)
	for {
		r, ok := <-h.reqs
		if !ok {
			return
		}
		batch = h.fill(append(batch[:0], r))
		h.commit(batch)
		clear(batch) // drop references for the GC
	}
}

// fill adds what is queued to batch, up to MaxBatch, waiting up to MaxDelay for
// more when it is positive.
func (h *Hub) fill(batch []*appendReq) []*appendReq {
	var deadline <-chan time.Time
	for len(batch) < h.opts.MaxBatch {
		select {
		case r, ok := <-h.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
			continue
		default:
		}
		if h.opts.MaxDelay <= 0 {
			return batch
		}
		if deadline == nil {
			t := time.NewTimer(h.opts.MaxDelay)
			defer t.Stop()
			deadline = t.C
		}
		select {
		case r, ok := <-h.reqs:
			if !ok {
				return batch
			}
			batch = append(batch, r)
		case <-deadline:
			return batch
		}
	}
	return batch
}

func (h *Hub) commit(batch []*appendReq) {
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	h.syncSeqs(batch)
	h.loadSeqs(ctx, batch)
	events := make([]Event, 0, len(batch))
	ready := batch[:0:0]
	var barriers []*appendReq
	// Barriers are told last, once the events queued before them are done.
	defer func() {
		for _, r := range barriers {
			r.done <- nil
		}
	}()
	for _, r := range batch {
		if r.barrier {
			barriers = append(barriers, r)
			continue
		}
		seq, ok := h.seqs[r.ev.ChatID]
		if !ok {
			last, err := h.st.LastSeq(ctx, r.ev.ChatID)
			if err != nil {
				r.finish(fmt.Errorf("last seq: %w", err))
				continue
			}
			seq = last
		}
		seq++
		h.seqs[r.ev.ChatID] = seq
		r.ev.Seq = seq
		events = append(events, r.ev)
		ready = append(ready, r)
	}
	if len(events) == 0 {
		return
	}
	start := time.Now()
	if err := h.store(events); err != nil {
		h.logger.Error("runhub commit failed: events lost", logkey.Events, len(events), logkey.Err, err)
		for _, e := range events {
			delete(h.seqs, e.ChatID) // reload from the store on the next append
		}
		for _, r := range ready {
			r.finish(err)
		}
		return
	}
	if h.opts.Persisted != nil {
		h.opts.Persisted(len(events), time.Since(start))
	}
	h.broadcast(events)
	for _, r := range ready {
		r.finish(nil)
	}
}

// store commits events, retrying while the store does not answer: a
// failed attempt is followed by a read of what the store holds, since a
// commit whose answer was lost may have landed (then it is done). While the
// store answers, a refusal is tried conflictAttempts times; while it does
// not, attempts go on with backoff for OutageLimit.
func (h *Hub) store(events []Event) error {
	start := time.Now()
	wait := retryFirst
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
		err := h.st.AppendEvents(ctx, events)
		if err == nil {
			cancel()
			if attempt > 1 {
				h.logger.Info("runhub: the database answers again; held events stored", logkey.Events, len(events), logkey.Attempt, attempt, logkey.Took, time.Since(start).Round(time.Millisecond))
			}
			return nil
		}
		if errors.Is(err, ErrStoreFull) {
			cancel()
			return err
		}
		landed, rerr := h.landed(ctx, events)
		cancel()
		switch {
		case rerr == nil && landed:
			h.logger.Info("runhub: a commit whose answer was lost had landed", logkey.Events, len(events), logkey.Err, err)
			return nil
		case rerr == nil && attempt >= conflictAttempts:
			return err // the store answers and refuses these events
		case rerr != nil && time.Since(start) >= h.opts.OutageLimit:
			return fmt.Errorf("%w for %s: %w", ErrStoreUnavailable, h.opts.OutageLimit, err)
		}
		if attempt == 1 {
			h.logger.Warn("runhub commit failed; holding the events and retrying", logkey.Events, len(events), logkey.Err, err)
		}
		if rerr != nil && !h.outage.Swap(true) {
			defer h.outage.Store(false)
		}
		h.opts.Sleep(wait)
		wait = min(2*wait, retryMax)
	}
}

// Reachable returns nil when the store answers now (a read of the last
// seq of chat): a caller about to act on something that must be recorded
// first (a person's decision) asks before acting. While the hub holds a
// batch the store did not take, it is ErrStoreUnavailable without asking.
func (h *Hub) Reachable(ctx context.Context, chat agent.ChatID) error {
	if h.outage.Load() {
		return fmt.Errorf("%w: events are waiting for it", ErrStoreUnavailable)
	}
	if _, err := h.st.LastSeq(ctx, chat); err != nil {
		return fmt.Errorf("%w: %w", ErrStoreUnavailable, err)
	}
	return nil
}

// landed reports whether events are stored as they are: each chat's last
// event of the batch is in the store with its run, type and payload.
func (h *Hub) landed(ctx context.Context, events []Event) (bool, error) {
	last := map[agent.ChatID]Event{}
	for _, e := range events {
		last[e.ChatID] = e
	}
	for c, e := range last {
		got, err := h.st.EventsAfter(ctx, c, e.Seq-1, 1)
		if err != nil {
			return false, err
		}
		if len(got) != 1 || got[0].Seq != e.Seq || got[0].RunID != e.RunID || got[0].Type != e.Type || !bytes.Equal(got[0].Payload, e.Payload) {
			return false, nil
		}
	}
	return true, nil
}

// loadSeqs reads the last seqs of the batch's chats that have none cached in
// one query, when the store can (SeqLoader) and more than one chat needs it.
// On failure it leaves them uncached: commit then reads them one by one.
func (h *Hub) loadSeqs(ctx context.Context, batch []*appendReq) {
	sl, ok := h.st.(SeqLoader)
	if !ok {
		return
	}
	var missing []agent.ChatID
	seen := map[agent.ChatID]bool{}
	for _, r := range batch {
		c := r.ev.ChatID
		if _, cached := h.seqs[c]; r.barrier || cached || seen[c] {
			continue
		}
		seen[c] = true
		missing = append(missing, c)
	}
	if len(missing) < 2 {
		return
	}
	seqs, err := sl.LastSeqs(ctx, missing)
	if err != nil {
		h.logger.Warn("runhub last seqs failed", "chats", len(missing), "err", err)
		return
	}
	for _, c := range missing {
		if seq, ok := seqs[c]; ok {
			h.seqs[c] = seq
		}
	}
}

// syncSeqs drops the cached seqs another replica may have outdated: those of
// chats locked since they were cached and of chats this hub holds no lock for.
func (h *Hub) syncSeqs(batch []*appendReq) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.stale {
		delete(h.seqs, c)
	}
	clear(h.stale)
	for _, r := range batch {
		if r.barrier {
			continue
		}
		if _, held := h.running[r.ev.ChatID]; !held {
			delete(h.seqs, r.ev.ChatID)
		}
	}
}

// broadcast offers committed events, in seq order, to the chats' subscribers
// without ever blocking.
func (h *Hub) broadcast(events []Event) {
	h.subMu.RLock()
	defer h.subMu.RUnlock()
	if len(h.subs) == 0 {
		return
	}
	for _, e := range events {
		for s := range h.subs[e.ChatID] {
			s.offer(e)
		}
	}
}

func (s *subscriber) offer(e Event) {
	if s.lagged.Load() {
		return // it will read this event from the store
	}
	select {
	case s.buf <- e:
	default:
		s.lagged.Store(true)
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

// Subscribe returns the chat's events with seq > afterSeq: first the stored ones,
// then live ones as they are committed, in seq order, each exactly once. The
// channel is closed when ctx ends or the hub is closed. A reader that stops
// reading never blocks appends; it catches up from the store when it resumes.
func (h *Hub) Subscribe(ctx context.Context, chatID agent.ChatID, afterSeq int64) <-chan Event {
	out := make(chan Event)
	h.closeMu.RLock()
	if h.closed {
		h.closeMu.RUnlock()
		close(out)
		return out
	}
	h.subWG.Add(1)
	h.closeMu.RUnlock()

	s := &subscriber{buf: make(chan Event, h.opts.SubscriberBuffer), wake: make(chan struct{}, 1)}
	// Register before the replay reads the store: every event committed after this
	// point reaches s.buf (or marks s lagged), every earlier one is in the store.
	h.subMu.Lock()
	set := h.subs[chatID]
	if set == nil {
		set = map[*subscriber]struct{}{}
		h.subs[chatID] = set
	}
	set[s] = struct{}{}
	h.subMu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(h.baseCtx, cancel)
	go func() {
		defer h.subWG.Done()
		defer cancel()
		defer stop()
		defer close(out)
		defer h.unsubscribe(chatID, s)
		h.pump(ctx, chatID, afterSeq, s, out)
	}()
	return out
}

func (h *Hub) unsubscribe(chatID agent.ChatID, s *subscriber) {
	h.subMu.Lock()
	defer h.subMu.Unlock()
	set := h.subs[chatID]
	delete(set, s)
	if len(set) == 0 {
		delete(h.subs, chatID)
	}
}

// pump delivers one subscription until ctx ends.
func (h *Hub) pump(ctx context.Context, chatID agent.ChatID, last int64, s *subscriber, out chan<- Event) {
	send := func(e Event) bool {
		select {
		case out <- e:
			last = e.Seq
			return true
		case <-ctx.Done():
			return false
		}
	}
	// catchUp reads the store from last until it is exhausted.
	catchUp := func() bool {
		backoff := 50 * time.Millisecond
		for {
			evs, err := h.st.EventsAfter(ctx, chatID, last, replayPage)
			if err != nil {
				if ctx.Err() != nil {
					return false
				}
				h.logger.Warn("runhub replay failed", logkey.ChatID, chatID, "after_seq", last, "err", err)
				select {
				case <-time.After(backoff):
					backoff = min(2*backoff, 5*time.Second)
					continue
				case <-ctx.Done():
					return false
				}
			}
			for _, e := range evs {
				if e.Seq <= last {
					continue
				}
				if !send(e) {
					return false
				}
			}
			if len(evs) < replayPage {
				return true
			}
		}
	}
	if !catchUp() {
		return
	}
	for {
		select {
		case e := <-s.buf:
			switch {
			case e.Seq <= last:
				continue // already delivered by a catch-up
			case e.Seq > last+1:
				// Events were dropped while lagging; they are committed, so the
				// store has them (and e).
				if !catchUp() {
					return
				}
				continue
			}
			if !send(e) {
				return
			}
		case <-s.wake:
			s.lagged.Store(false) // before reading the store, see Subscribe
			if !catchUp() {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}
