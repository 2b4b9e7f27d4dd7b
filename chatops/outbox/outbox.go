// outbox.go: one workspace's queue of message updates. Updates of one message
// coalesce (only the newest content is sent), a shared token budget per kind of
// call bounds the rate of the whole workspace, final answers and interaction
// cards go ahead of progress, and a 429 pauses the workspace for Retry-After.

// Package outbox sends a workspace's rendered messages to its chat platform
// within a rate budget: updates of one message coalesce, final answers and
// cards go ahead of progress, a rate limit pauses the workspace, network
// failures are retried, and each post carries an idempotency key (its run's
// message slot) so that a retried post can be recognised.
package outbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops/render"
)

// Rate is a token bucket: PerMinute calls on average, Burst at once.
type Rate struct {
	PerMinute float64
	Burst     int
}

// Budget is a workspace's rate budget: one bucket per kind of call, each
// matching the documented limit of the platform method it stands for.
type Budget struct {
	// Post covers new messages (Slack chat.postMessage, files). Default
	// 60/min, burst 5.
	Post Rate
	// Start covers stream starts (chat.startStream, Tier 3 for Slack's
	// agents). Default 50/min, burst 5; Post when only Post is set.
	Start Rate
	// Update covers edits (chat.update is Slack Tier 3). Default 50/min,
	// burst 5.
	Update Rate
	// Append covers stream appends (chat.appendStream is Tier 4). Default
	// 100/min, burst 5.
	Append Rate
	// Stop covers stream stops (chat.stopStream is Tier 2). Default 20/min,
	// burst 5. Its burst also bounds the answers streamed at once: a
	// stream needs a stop to end, and more streams ending together than
	// the burst would wait long for their stops, so the answers beyond it
	// are posted and edited instead.
	Stop Rate
	// Delete covers deletions (chat.delete is Tier 3). Default 50/min, burst 5.
	Delete Rate
	// Status covers status indicators (assistant.threads.setStatus, whose
	// limit Slack calls special). Default 100/min, burst 10.
	Status Rate
	// MinInterval is the least time between two progress updates of one
	// run's answer (default 1 s): its parts share it, so a long answer split
	// into several messages costs no more calls than a short one. Final
	// content and cards do not wait for it.
	MinInterval time.Duration
	// MaxAttempts bounds the tries of one update that the platform refused
	// (an error that is neither a rate limit, a network failure nor a 5xx;
	// default 3).
	MaxAttempts int
	// RetryMin and RetryMax bound the backoff between the tries of an
	// update that failed on the network, with a 5xx or a timeout: the first
	// waits RetryMin (default 250 ms), each next one twice as long, up to
	// RetryMax (default 10 s); a Retry-After the platform sent is waited
	// instead.
	RetryMin, RetryMax time.Duration
	// RetryFor is how long such an update is retried, from its first
	// failure, before it is given up and logged as an error (default 30
	// min): long enough to ride out a platform's outage, so that an answer
	// never ends short of its last text, its footer or its stream's stop.
	RetryFor time.Duration
}

// WithDefaults returns b with every unset field at its default.
func (b Budget) WithDefaults() Budget {
	def := func(r *Rate, pm float64, burst int) {
		if r.PerMinute <= 0 {
			r.PerMinute = pm
		}
		if r.Burst <= 0 {
			r.Burst = burst
		}
	}
	if b.Start == (Rate{}) && b.Post.PerMinute > 0 {
		// A budget that sets Post alone meant stream starts too, as they
		// once shared it.
		b.Start = b.Post
	}
	def(&b.Post, 60, 5)
	def(&b.Start, 50, 5)
	def(&b.Update, 50, 5)
	def(&b.Append, 100, 5)
	def(&b.Stop, 20, 5)
	def(&b.Delete, 50, 5)
	def(&b.Status, 100, 10)
	if b.MinInterval <= 0 {
		b.MinInterval = time.Second
	}
	if b.MaxAttempts <= 0 {
		b.MaxAttempts = 3
	}
	if b.RetryMin <= 0 {
		b.RetryMin = 250 * time.Millisecond
	}
	if b.RetryMax <= 0 {
		b.RetryMax = 10 * time.Second
	}
	b.RetryMax = max(b.RetryMax, b.RetryMin)
	if b.RetryFor <= 0 {
		b.RetryFor = 30 * time.Minute
	}
	return b
}

type bucket struct {
	rate   Rate
	tokens float64
	at     time.Time
}

// rateMargin is how far under a documented rate a bucket refills: the
// platform counts calls when they arrive, and a call that took longer than
// the next one on the way there would otherwise find the platform's bucket
// a hair short of a token.
const rateMargin = 0.95

func newBucket(r Rate, now time.Time) *bucket {
	r.PerMinute *= rateMargin
	return &bucket{rate: r, tokens: float64(r.Burst), at: now}
}

func (b *bucket) refill(now time.Time) {
	if now.After(b.at) {
		b.tokens = min(float64(b.rate.Burst), b.tokens+now.Sub(b.at).Minutes()*b.rate.PerMinute)
		b.at = now
	}
}

// ready returns when a token is available (now or later; at most idleWait
// ahead, for a rate so low that the wait would not fit a time.Duration).
func (b *bucket) ready(now time.Time) time.Time { return b.readyKeeping(now, 0) }

// readyKeeping returns when a token is available with keep more left over.
func (b *bucket) readyKeeping(now time.Time, keep float64) time.Time {
	b.refill(now)
	if b.tokens >= 1+keep {
		return now
	}
	if mins := (1 + keep - b.tokens) / b.rate.PerMinute; mins < idleWait.Minutes() {
		return now.Add(time.Duration(mins * float64(time.Minute)))
	}
	return now.Add(idleWait)
}

func (b *bucket) take(now time.Time) {
	b.refill(now)
	b.tokens--
}

type opKind int

const (
	opPost opKind = iota
	opStart
	opUpdate
	opAppend
	opStop
	opDelete
	opStatus
	// opNone marks content the message already shows: nothing is called.
	opNone
)

// Slot kinds: a run's messages, its status indicator, and the companion
// message that holds the Stop button while an answer streams natively (a
// stream cannot show buttons).
type slotKind int

const (
	kindMessage slotKind = iota
	kindStatus
	kindControls
)

// Outbox-made slots of a run.
const (
	slotStatus   = "status"
	slotControls = "controls"
)

func kindOf(slot string) slotKind {
	switch slot {
	case slotStatus:
		return kindStatus
	case slotControls:
		return kindControls
	}
	return kindMessage
}

// Stats counts a workspace's calls.
type Stats struct {
	Calls       int
	RateLimited int
	Failures    int
	// SharedWaits counts the calls the shared limiter (WithLimiter) made
	// wait: another replica had spent the workspace's budget.
	SharedWaits int
	// SharedFailures counts the shared limiter's failures: errors, and
	// takes not answered in time.
	SharedFailures int
	// SharedSkips counts the calls that went without the shared limiter's
	// token, within the outbox's own buckets: it failed, did not answer in
	// time, or was being left alone after a failure.
	SharedSkips int
}

// oslot is one message of a run as the outbox knows it.
type oslot struct {
	rm       Message
	want     *render.SlotView
	wantSeq  int64
	gen      int
	since    time.Time // when want became pending
	lastSent time.Time
	attempts int
	retryAt  time.Time
	// failing is when the calls of this slot began to fail (zero while
	// they succeed): a retryable failure is retried until Budget.RetryFor
	// after it.
	failing   time.Time
	kind      slotKind
	streaming bool
	streamed  streamed
	// placeholder is set while the message shows a placeholder: its first
	// real text does not wait for MinInterval.
	placeholder bool
	// shown is a status slot's last sent status.
	shown *render.SlotView
	// quiet is set on a status slot whose run's answer message came after
	// the status showed (posts had to wait): the reply cleared the status
	// and the message's text and steps show the work from then on, so
	// nothing more is sent (not even a clear, which would change nothing).
	quiet   bool
	waiters []chan struct{}
}

func (s *oslot) resolve() {
	for _, w := range s.waiters {
		close(w)
	}
	s.waiters = nil
}

// Outbox sends one workspace's updates from a single goroutine (Run).
type Outbox struct {
	surface Sender
	store   Saver
	budget  Budget
	log     *slog.Logger
	stream  bool

	mu          sync.Mutex
	streamFails int
	noStatus    bool
	slots       map[slotKey]*oslot
	// runSent is when a run's answer last had a progress call.
	runSent map[agent.RunID]time.Time
	paused  time.Time
	buckets map[opKind]*bucket
	stats   Stats
	wake    chan struct{}

	// shared, when set, is the budget this outbox shares with other
	// replicas' (limiter.go); sharedReady is when each kind may ask it again.
	shared      Limiter
	sharedKey   string
	sharedReady map[opKind]time.Time
	// sharedAnswer and sharedBreak are limiter.go's timings (tests shorten
	// them).
	sharedAnswer, sharedBreak time.Duration
	// sharedOff is when the shared limiter may be asked again after a
	// failure (the breaker); sharedDown, that the failure was logged and no
	// answer has come since.
	sharedOff  time.Time
	sharedDown bool
	// pauseWant is the latest pause to tell the shared limiter; pausing,
	// that a goroutine is telling it.
	pauseWant time.Time
	pausing   bool
	// asking is the answer to come of a take the worker stopped waiting
	// for (Run's goroutine only).
	asking chan sharedReply
	// statusPaused is when statuses may go again after a 429 on one.
	statusPaused time.Time
	// streams counts the messages streaming now, edited the answers'
	// messages edited as they grow (as of next's last look).
	streams, edited int
}

// New returns the outbox of a workspace sending through s. st, when not nil,
// is told every message sent; stream uses s's native streaming where s is a
// Streamer. Nothing is sent until Run is called.
func New(s Sender, st Saver, b Budget, stream bool, log *slog.Logger, opts ...Option) *Outbox {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b = b.WithDefaults()
	now := time.Now()
	_, canStream := s.(Streamer)
	o := &Outbox{
		surface: s, store: st, budget: b, log: log, stream: stream && canStream,
		slots: map[slotKey]*oslot{}, runSent: map[agent.RunID]time.Time{},
		buckets: map[opKind]*bucket{
			opPost: newBucket(b.Post, now), opStart: newBucket(b.Start, now), opUpdate: newBucket(b.Update, now), opAppend: newBucket(b.Append, now),
			opStop: newBucket(b.Stop, now), opDelete: newBucket(b.Delete, now), opStatus: newBucket(b.Status, now),
		},
		wake: make(chan struct{}, 1), sharedReady: map[opKind]time.Time{},
		sharedAnswer: sharedAnswer, sharedBreak: sharedBreak,
	}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// slotKey names a message of a run: the run and the message's slot.
type slotKey struct {
	run  agent.RunID
	slot string
}

// Load registers what the store knows of a run's messages, so that replayed
// content that was already sent is not sent again and edits reach the same
// messages.
func (o *Outbox) Load(rows []Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rm := range rows {
		k := slotKey{rm.RunID, rm.Slot}
		if _, ok := o.slots[k]; !ok {
			s := &oslot{rm: rm, kind: kindOf(rm.Slot)}
			o.slots[k] = s
			if s.kind == kindControls && !rm.Final && rm.MessageID != "" {
				// Its stream died with the process that ran it: the answer
				// shows its own Stop button from now on.
				s.want, s.since = &render.SlotView{Slot: slotControls, Final: true, Priority: render.PriorityFinal}, time.Now()
				o.poke()
			}
		}
	}
}

// Put sets the wanted content of a message of run runID (slot sv.Slot, shown
// in place), replacing content not yet sent. seq is the newest event sv
// shows; firstSeq the run's first.
func (o *Outbox) Put(chatID agent.ChatID, runID agent.RunID, place Place, firstSeq, seq int64, sv render.SlotView) {
	o.mu.Lock()
	k := slotKey{runID, sv.Slot}
	s := o.slots[k]
	if s == nil {
		s = &oslot{rm: Message{RunID: runID, Slot: sv.Slot, ChatID: chatID, Place: place, FirstSeq: firstSeq}}
		o.slots[k] = s
	}
	if s.rm.Final && s.rm.Hash != "" {
		o.mu.Unlock()
		return // a message that shows its end never changes again
	}
	v := sv
	if s.want == nil {
		s.since = time.Now()
	}
	s.want, s.wantSeq = &v, seq
	s.gen++
	if render.IsAnswer(sv.Slot) && (sv.View.Activity != "" || sv.Final) {
		o.status(chatID, runID, place, firstSeq, seq, sv.View.Activity, sv.Final)
	}
	o.mu.Unlock()
	o.poke()
}

// status sets the run's status indicator to activity ("" clears it once the
// run's answer is final) where the platform has one. o.mu is held.
func (o *Outbox) status(chatID agent.ChatID, runID agent.RunID, place Place, firstSeq, seq int64, activity string, final bool) {
	if _, ok := o.surface.(StatusSetter); !ok || o.noStatus {
		return
	}
	k := slotKey{runID, slotStatus}
	s := o.slots[k]
	if s == nil {
		if final {
			return // never set
		}
		s = &oslot{rm: Message{RunID: runID, Slot: slotStatus, ChatID: chatID, Place: place, FirstSeq: firstSeq}, kind: kindStatus}
		o.slots[k] = s
	}
	if s.rm.Final || (s.quiet && !final) {
		return
	}
	if final {
		activity = ""
	}
	if s.want == nil {
		s.since = time.Now()
	}
	prio := render.PriorityCard
	if final {
		prio = render.PriorityFinal
	}
	s.want = &render.SlotView{Slot: slotStatus, View: render.View{Status: activity}, Priority: prio, Final: final}
	s.wantSeq = seq
	s.gen++
}

// controls shows buttons in the run's companion message while one of its
// answer parts streams natively (nil buttons: the stream ended, the
// companion goes). o.mu is held.
func (o *Outbox) controls(rm Message, buttons []render.Button) {
	if _, ok := o.surface.(Deleter); !ok {
		return
	}
	if own, ok := o.surface.(OwnStopper); ok && buttons != nil && own.OwnStop(rm.Place) {
		// The platform shows its own Stop on the stream: no companion.
		return
	}
	k := slotKey{rm.RunID, slotControls}
	s := o.slots[k]
	if s == nil {
		if buttons == nil {
			return
		}
		s = &oslot{rm: Message{RunID: rm.RunID, Slot: slotControls, ChatID: rm.ChatID, Place: rm.Place, FirstSeq: rm.FirstSeq}, kind: kindControls}
		o.slots[k] = s
	}
	if s.rm.Final {
		return
	}
	var want render.SlotView
	switch {
	case buttons == nil && s.rm.MessageID == "":
		// Never posted: nothing to remove.
		s.rm.Final, s.want = true, nil
		s.resolve()
		return
	case buttons == nil:
		want = render.SlotView{Slot: slotControls, Final: true, Priority: render.PriorityFinal}
	default:
		v := render.View{Status: ControlsText, Buttons: buttons, Fallback: ControlsText}
		want = render.SlotView{Slot: slotControls, View: v, Priority: render.PriorityCard}
		if s.want == nil && s.rm.MessageID != "" && s.rm.Hash == v.Hash() {
			return
		}
	}
	if s.want == nil {
		s.since = time.Now()
	}
	s.want = &want
	s.gen++
}

// StatusRefresh is how often a status that did not change is shown again
// (Slack removes one after two minutes without a message).
const StatusRefresh = 90 * time.Second

// ControlsText is the line of the companion message that holds a natively
// streamed answer's Stop button.
const ControlsText = "⏹ Working on the answer above…"

func (o *Outbox) poke() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// Flush waits until every message of the run shows its wanted content (or
// gave up), or ctx ends.
func (o *Outbox) Flush(ctx context.Context, runID agent.RunID) error {
	// A sent message can want more (its stream's companion goes when the
	// stream stops): wait until nothing of the run is pending.
	for {
		o.mu.Lock()
		var waits []chan struct{}
		for k, s := range o.slots {
			if k.run == runID && s.want != nil {
				w := make(chan struct{})
				s.waiters = append(s.waiters, w)
				waits = append(waits, w)
			}
		}
		o.mu.Unlock()
		if len(waits) == 0 {
			return nil
		}
		for _, w := range waits {
			select {
			case <-w:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
}

// Forget drops the run's slots from memory once it is rendered.
func (o *Outbox) Forget(runID agent.RunID) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, s := range o.slots {
		if k.run == runID && s.want == nil {
			delete(o.slots, k)
		}
	}
	delete(o.runSent, runID)
}

// Stats returns the counts of calls made so far.
func (o *Outbox) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.stats
}

// job is one call the worker decided to make.
type job struct {
	s    *oslot
	sv   render.SlotView
	seq  int64
	gen  int
	op   opKind
	hash string
	at   time.Time // when next chose it
}

// Run is the worker: it sends the most urgent eligible update whenever the
// budget allows, until ctx ends. Call it once, in a goroutine of its own.
func (o *Outbox) Run(ctx context.Context) {
	for {
		j, wait := o.next(time.Now())
		if j == nil {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-o.wake:
			case <-t.C:
			}
			t.Stop()
			continue
		}
		at := j.at
		if o.shared != nil && j.op != opNone {
			if !o.takeShared(ctx, j.op) {
				if ctx.Err() != nil {
					return
				}
				continue // another kind may go meanwhile
			}
			at = time.Now()
		}
		o.commit(j, at)
		o.send(ctx, j)
	}
}

const idleWait = time.Hour

// next picks the update to send now, or says how long to wait.
func (o *Outbox) next(now time.Time) (*job, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if now.Before(o.paused) {
		return nil, o.paused.Sub(now)
	}
	var (
		best     *oslot
		bestOp   opKind
		earliest = now.Add(idleWait)
	)
	// A run's answer parts are posted in order, and its file after them.
	firstUnposted := map[agent.RunID]int{}
	for _, s := range o.slots {
		if k, ok := render.AnswerIndex(s.rm.Slot); ok && s.rm.MessageID == "" {
			if cur, seen := firstUnposted[s.rm.RunID]; !seen || k < cur {
				firstUnposted[s.rm.RunID] = k
			}
		}
	}
	// postsWait says more answers wait for their first message than the
	// post budget has tokens now: their statuses go first, so that every
	// thread shows a sign at once.
	waitingFirst := 0
	for run, k := range firstUnposted {
		if k == 0 {
			if a := o.slots[slotKey{run, "answer/0"}]; a != nil && a.want != nil {
				waitingFirst++
			}
		}
	}
	o.streams, o.edited = 0, 0
	for _, s := range o.slots {
		switch {
		case s.streaming:
			o.streams++
		case s.kind == kindMessage && render.IsAnswer(s.rm.Slot) && s.rm.MessageID != "" && !s.rm.Final:
			o.edited++
		}
	}
	firstOp := opPost
	if o.stream && o.streams < o.budget.Stop.Burst {
		firstOp = opStart
	}
	postsWait := waitingFirst > 0 && (o.readyAt(firstOp, now).After(now) || float64(waitingFirst) > o.buckets[firstOp].tokens)
	for _, s := range o.slots {
		if s.want == nil && s.kind == kindStatus && s.shown != nil && !s.rm.Final {
			// Slack drops a status after two minutes without a message:
			// keep a long tool call's status up.
			if at := s.lastSent.Add(StatusRefresh); !at.After(now) {
				s.want, s.since, s.rm.Hash = s.shown, now, ""
			} else {
				earliest = earlier(earliest, at)
			}
		}
		if s.want == nil {
			continue
		}
		if first, waiting := firstUnposted[s.rm.RunID]; waiting && s.rm.MessageID == "" {
			if k, ok := render.AnswerIndex(s.rm.Slot); (ok && k > first) || s.rm.Slot == render.SlotFile {
				continue
			}
		}
		if s.want.View.Hash() == s.rm.Hash && s.rm.MessageID != "" && (s.rm.Final || !s.want.Final) && !(s.streaming && o.frozen(s)) {
			// Already shows exactly this (a replay after a restart; a part
			// whose stream is still to end is not done).
			s.want = nil
			s.resolve()
			continue
		}
		if first, waiting := firstUnposted[s.rm.RunID]; waiting && first == 0 && s.kind == kindStatus && s.want.Final && s.shown != nil {
			// The answer ended before its first message went: the status
			// stays the thread's sign until it goes, and that reply
			// clears it.
			continue
		}
		if first, waiting := firstUnposted[s.rm.RunID]; waiting && first == 0 && s.kind == kindStatus && !postsWait {
			// The answer's first message can go now: it is the sign, and
			// the status goes up after it (a platform may clear it when
			// the bot posts). When posts must wait, the status goes
			// first, on its own budget.
			continue
		}
		ready := s.retryAt
		switch {
		case s.kind == kindStatus:
			if !s.want.Final && !s.lastSent.IsZero() {
				ready = later(ready, s.lastSent.Add(o.budget.MinInterval))
			}
		case s.want.Priority == render.PriorityProgress && !(s.placeholder && !s.want.View.Working):
			ready = later(ready, o.runSent[s.rm.RunID].Add(o.pace(s)))
		}
		if ready.After(now) {
			earliest = earlier(earliest, ready)
			continue
		}
		op := o.opFor(s)
		if op != opNone {
			// A call whose kind has no token now does not hold up the
			// calls of other kinds.
			at := o.readyAt(op, now)
			if s.kind == kindMessage && s.want.Priority == render.PriorityProgress && op != opStart && op != opPost {
				// Progress leaves part of the burst to the answers' ends:
				// many answers ending together each close at once.
				at = later(at, o.buckets[op].readyKeeping(now, float64(o.buckets[op].rate.Burst/2)))
			}
			if at.After(now) {
				earliest = earlier(earliest, at)
				if !o.appendFirst(s, op, now) {
					continue
				}
				// The stop has to wait (chat.stopStream's tier is low): the
				// end of the text goes out as an append meanwhile.
				op = opAppend
			}
		}
		if best == nil || rank(s) > rank(best) || (rank(s) == rank(best) && s.since.Before(best.since)) {
			best, bestOp = s, op
		}
	}
	if best == nil {
		return nil, earliest.Sub(now)
	}
	return &job{s: best, sv: *best.want, seq: best.wantSeq, gen: best.gen, op: bestOp, hash: best.want.View.Hash(), at: now}, 0
}

// pace is the least time between two progress calls of s's run: the
// budget's MinInterval, or, while several answers grow on the same kind of
// call, each one's fair share of that kind's rate, so that each answer
// costs a few calls spread over its text rather than a burst of them and
// the budget's tokens are left for the answers' ends. o.mu is held.
func (o *Outbox) pace(s *oslot) time.Duration {
	n, op := o.edited, opUpdate
	if s.streaming {
		n, op = o.streams, opAppend
	}
	if n < 2 {
		return o.budget.MinInterval
	}
	share := time.Duration(2 * float64(n) / o.buckets[op].rate.PerMinute * float64(time.Minute))
	return max(o.budget.MinInterval, share)
}

// rank orders the pending updates: by priority, save that a companion's
// Stop button goes after every other post (another thread's first text
// is never held up by it; its stream shows Slack's own working state
// meanwhile). The status goes first: it is the cheapest sign of work, on a
// budget of its own.
func rank(s *oslot) render.Priority {
	if s.kind == kindControls && !s.want.Final {
		return render.PriorityProgress - 1
	}
	return s.want.Priority
}

// commit spends the budget of the job next chose: a token of its kind and,
// for an answer's progress, the run's interval.
func (o *Outbox) commit(j *job, now time.Time) {
	if j.op == opNone {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buckets[j.op].take(now)
	if render.IsAnswer(j.s.rm.Slot) && (j.sv.Priority == render.PriorityProgress || j.op == opAppend) {
		// A placeholder's first text goes at once but borrows the next
		// interval, so that the run stays within one call per interval.
		if paced := o.runSent[j.s.rm.RunID].Add(o.budget.MinInterval); paced.After(now) {
			o.runSent[j.s.rm.RunID] = paced
		} else {
			o.runSent[j.s.rm.RunID] = now
		}
	}
}

func (o *Outbox) opFor(s *oslot) opKind {
	switch {
	case s.kind == kindStatus && s.want.Final && s.shown == nil:
		// Never shown (the run ended before its status could go up):
		// there is nothing to clear.
		return opNone
	case s.kind == kindStatus:
		return opStatus
	case s.kind == kindControls && s.want.Final:
		return opDelete
	case s.rm.MessageID == "" && o.stream && render.IsAnswer(s.want.Slot) && !s.want.Final && o.streams < o.budget.Stop.Burst:
		// Streamed natively, while the streams open can all be stopped
		// within the stop budget's burst.
		return opStart
	case s.rm.MessageID == "" || s.want.Slot == render.SlotFile:
		return opPost
	case s.streaming && (s.want.Final || o.frozen(s)):
		return opStop
	case s.streaming:
		return opAppend
	case s.want.Final && s.want.View.Hash() == s.rm.Hash:
		// Shows this already; only its being final is new.
		return opNone
	default:
		return opUpdate
	}
}

// appendFirst reports whether a stream whose stop waits for a token should
// send its new text and cards as an append now: there are some, the
// append's bucket has a token and the run's pace allows a call. o.mu is held.
func (o *Outbox) appendFirst(s *oslot, op opKind, now time.Time) bool {
	if op != opStop || o.readyAt(opAppend, now).After(now) || o.runSent[s.rm.RunID].Add(o.budget.MinInterval).After(now) {
		return false
	}
	chunks, _, ok := s.streamed.diff(s.want.View)
	return ok && len(chunks) > 0
}

// frozen reports whether an answer part has a next part: its content never
// changes again, so its stream can end now. o.mu is held.
func (o *Outbox) frozen(s *oslot) bool {
	k, ok := render.AnswerIndex(s.rm.Slot)
	if !ok {
		return false
	}
	_, next := o.slots[slotKey{s.rm.RunID, fmt.Sprintf("answer/%d", k+1)}]
	return next
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// send makes one call and records its outcome.
func (o *Outbox) send(ctx context.Context, j *job) {
	s := j.s
	o.mu.Lock()
	rm := s.rm
	streaming, st := s.streaming, s.streamed
	frozen := j.op == opStop && !j.sv.Final
	if j.op != opNone {
		o.stats.Calls++
	}
	o.mu.Unlock()

	var (
		id  = rm.MessageID
		err error
	)
	next := st
	isAnswer := render.IsAnswer(j.sv.Slot)
	switch {
	case j.op == opNone:
	case s.kind == kindStatus:
		err = o.surface.(StatusSetter).SetStatus(ctx, rm.Place, j.sv.View.Status)
		if err == nil {
			id = slotStatus
		}
	case j.op == opDelete:
		err = o.surface.(Deleter).Delete(ctx, rm.Place, id)
		if errors.Is(err, ErrMessageGone) {
			err = nil
		}
	case j.sv.Slot == render.SlotFile:
		if id == "" {
			id, err = o.surface.Upload(ctx, rm.Place, "answer.md", j.sv.Upload)
		}
	case j.op == opStart:
		chunks, ns, _ := streamed{}.diff(j.sv.View)
		id, err = o.surface.(Streamer).StartStream(ctx, rm.Place, chunks)
		if err == nil {
			streaming, next = true, ns
		} else if errors.Is(err, ErrStreamingUnavailable) {
			// Post this message; after a few refusals stop trying to stream.
			o.mu.Lock()
			o.streamFails++
			if o.streamFails >= 3 {
				o.stream = false
				o.log.InfoContext(ctx, "native streaming unavailable, posting and editing", "workspace", rm.Place.Workspace, "err", err)
			}
			o.mu.Unlock()
			id, err = o.surface.Post(ctx, rm.Place, keyed(j.sv.View, rm))
		}
	case id == "":
		id, err = o.surface.Post(ctx, rm.Place, keyed(j.sv.View, rm))
	case streaming:
		chunks, ns, ok := st.diff(j.sv.View)
		if !ok {
			// Not an append (cannot happen for a frozen part): end the stream
			// with the whole view and edit from now on.
			err = o.surface.(Streamer).StopStream(ctx, rm.Place, id, nil, j.sv.View)
			if err == nil || errors.Is(err, ErrNotStreaming) {
				streaming = false
				err = o.surface.Update(ctx, rm.Place, id, j.sv.View)
			}
			break
		}
		if j.op == opStop {
			// A failed stop leaves the message streaming: it is stopped
			// again, never edited (an edit cannot end a stream).
			err = o.surface.(Streamer).StopStream(ctx, rm.Place, id, chunks, j.sv.View)
			if err == nil {
				streaming = false
			}
		} else if len(chunks) > 0 {
			err = o.surface.(Streamer).AppendStream(ctx, rm.Place, id, chunks)
		}
		if err == nil {
			next = ns
		} else if errors.Is(err, ErrNotStreaming) {
			streaming = false
			err = o.surface.Update(ctx, rm.Place, id, j.sv.View)
		}
	default:
		err = o.surface.Update(ctx, rm.Place, id, j.sv.View)
	}

	now := time.Now()
	var pauseUntil time.Time // set on a 429: the other replicas pause too
	o.mu.Lock()
	var rle *RateLimitError
	switch {
	case err == nil:
		if j.op == opAppend && j.sv.Final {
			// Only the text went: the stop is still to come.
			s.streaming, s.streamed = streaming, next
			s.lastSent, s.attempts, s.retryAt, s.failing = now, 0, time.Time{}, time.Time{}
			o.mu.Unlock()
			return
		}
		s.rm.MessageID, s.rm.Hash, s.rm.LastSeq, s.rm.Final = id, j.hash, j.seq, j.sv.Final
		if frozen {
			// An earlier part whose stream ended: it never changes again.
			s.rm.Final = true
		}
		s.streaming, s.streamed = streaming, next
		s.lastSent, s.attempts, s.retryAt, s.failing = now, 0, time.Time{}, time.Time{}
		s.placeholder = j.sv.View.Working
		if s.gen == j.gen {
			s.want = nil
		}
		if s.kind == kindStatus {
			sv := j.sv
			s.shown = &sv
		}
		if ss := o.slots[slotKey{rm.RunID, slotStatus}]; (j.op == opStart || j.op == opPost) && rm.MessageID == "" && isAnswer && ss != nil && ss.shown != nil {
			// The answer's message came where the status was the sign
			// while it waited: the reply cleared the status (Slack does
			// when the app replies) and the message shows the work from
			// now on (its text, its steps).
			if !ss.rm.Final {
				ss.quiet, ss.shown = true, nil
				if ss.want != nil && !ss.want.Final {
					ss.want = nil
					ss.resolve()
				}
			}
		} else if (j.op == opPost || j.op == opStart) && s.kind != kindStatus {
			// A post in the thread clears its status (Slack does when the
			// app replies): show it again.
			if ss := o.slots[slotKey{rm.RunID, slotStatus}]; ss != nil && ss.shown != nil && !ss.rm.Final && ss.shown.View.Status != "" {
				if ss.want == nil {
					ss.want, ss.since = ss.shown, now
				}
				// What it showed is gone: show it again now.
				ss.rm.Hash, ss.lastSent = "", time.Time{}
			}
		}
		if isAnswer && j.op != opNone {
			switch {
			case streaming && len(j.sv.View.Buttons) > 0:
				o.controls(s.rm, j.sv.View.Buttons)
			case !streaming && (j.sv.Final || len(j.sv.View.Buttons) > 0):
				// The run ended, or the message shows its own buttons.
				o.controls(s.rm, nil)
			}
		}
	case errors.As(err, &rle) || errors.Is(err, ErrRateLimited):
		o.stats.RateLimited++
		wait := time.Second
		if rle != nil && rle.RetryAfter > 0 {
			wait = rle.RetryAfter
		}
		if s.kind == kindStatus {
			// A status has a limit of its own (Slack's setStatus
			// methods): only statuses wait, the answers go on.
			o.statusPaused = later(o.statusPaused, now.Add(wait))
			break
		}
		o.paused = later(o.paused, now.Add(wait))
		pauseUntil = o.paused
		if id != "" && s.rm.MessageID == "" {
			s.rm.MessageID = id // posted, then limited on a follow-up call
		}
	case s.kind == kindStatus && errors.Is(err, ErrUnsupported):
		// No status indicator here: stop trying in this workspace.
		o.stats.Failures++
		o.noStatus = true
		o.log.InfoContext(ctx, "no status indicator here", "run_id", rm.RunID, "err", err)
		s.want, s.rm.Final = nil, true
	case errors.Is(err, ErrMessageGone) && s.rm.MessageID == id:
		// Deleted in the client: post the content anew.
		o.stats.Failures++
		o.log.InfoContext(ctx, "message gone, posting it again", "run_id", rm.RunID, "slot", rm.Slot)
		s.rm.MessageID, s.rm.Hash, s.streaming, s.streamed = "", "", false, streamed{}
	default:
		o.stats.Failures++
		s.attempts++
		if s.failing.IsZero() {
			s.failing = now
		}
		if id != "" && s.rm.MessageID == "" {
			s.rm.MessageID = id
		}
		s.streaming = streaming
		o.failed(ctx, s, j, err, now)
	}
	o.log.Debug("outbox call", "run_id", rm.RunID, "slot", rm.Slot, "message_id", id, "err", err)
	// A status indicator is not a message: there is nothing to find again.
	save := err == nil && s.kind != kindStatus
	row := s.rm
	// A Flush waiting on the slot returns once its row is saved, not
	// before: whoever flushed may read the rows next (or stop).
	var done []chan struct{}
	if s.want == nil {
		done, s.waiters = s.waiters, nil
	}
	o.mu.Unlock()
	if !pauseUntil.IsZero() {
		o.pauseShared(ctx, pauseUntil)
	}
	if save && o.store != nil {
		if serr := o.store.SaveRenderedMessage(context.WithoutCancel(ctx), row); serr != nil {
			o.log.ErrorContext(ctx, "save rendered message", "run_id", row.RunID, "slot", row.Slot, "err", serr)
		}
	}
	for _, w := range done {
		close(w)
	}
}

// failed decides what comes of a call that failed for another reason than a
// rate limit or a gone message: a retry after a backoff, or, past the
// budget's limits, giving the content up. Giving up the end of a run's
// answer (its last text, footer, stream stop) is an error. o.mu is held.
func (o *Outbox) failed(ctx context.Context, s *oslot, j *job, err error, now time.Time) {
	rm := s.rm
	giveUp := func(why string) {
		level := slog.LevelWarn
		if j.sv.Final && s.kind == kindMessage {
			level = slog.LevelError
		}
		o.log.Log(ctx, level, "giving up on a message update: "+why, logkey.RunID, rm.RunID, logkey.Slot, rm.Slot,
			logkey.Attempt, s.attempts, logkey.Err, err)
		if s.gen == j.gen {
			s.want = nil
		}
		s.attempts, s.failing = 0, time.Time{}
	}
	retry, after := retryable(ctx, err)
	switch {
	case retry && now.Sub(s.failing) >= o.budget.RetryFor:
		giveUp(fmt.Sprintf("the platform failed for %s", o.budget.RetryFor))
	case retry:
		// The platform may not even have seen the call (a dropped
		// connection, a timeout) or failed to answer it (a 5xx): never
		// give up on what the user must see; retry with a capped backoff.
		wait := after
		if wait <= 0 {
			wait = o.backoff(s.attempts)
		}
		o.log.InfoContext(ctx, "message update failed, retrying", logkey.RunID, rm.RunID, logkey.Slot, rm.Slot,
			logkey.Attempt, s.attempts, logkey.RetryIn, wait, logkey.Err, err)
		s.retryAt = now.Add(wait)
	case s.attempts >= o.budget.MaxAttempts:
		giveUp("the platform refused it")
	default:
		o.log.InfoContext(ctx, "message update refused, retrying", logkey.RunID, rm.RunID, logkey.Slot, rm.Slot,
			logkey.Attempt, s.attempts, logkey.Err, err)
		s.retryAt = now.Add(time.Duration(s.attempts) * time.Second)
	}
}

// backoff is the wait before the try after attempt failed ones: RetryMin
// doubled at each, at most RetryMax.
func (o *Outbox) backoff(attempt int) time.Duration {
	wait := o.budget.RetryMin
	for i := 1; i < attempt && wait < o.budget.RetryMax; i++ {
		wait *= 2
	}
	return min(wait, o.budget.RetryMax)
}

// statusCoder is a platform library's HTTP status error (slack-go's
// StatusCodeError).
type statusCoder interface{ HTTPStatusCode() int }

// statusTester is a platform library's HTTP error that answers whether it
// had a status (mautrix's HTTPError).
type statusTester interface{ IsStatus(code int) bool }

// retryable reports whether err says the call failed for now and may be
// sent again as is: a failure of the transport, a timeout of the call (not
// of ctx), an HTTP 5xx or 408 (an UnavailableError, or a platform library's
// status error); after is the wait the platform asked for (0: none).
func retryable(ctx context.Context, err error) (ok bool, after time.Duration) {
	var ue *UnavailableError
	if errors.As(err, &ue) {
		return true, ue.RetryAfter
	}
	if errors.Is(err, ErrUnavailable) || transient(err) {
		return true, 0
	}
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return true, 0
	}
	var sc statusCoder
	if errors.As(err, &sc) && unavailableStatus(sc.HTTPStatusCode()) {
		return true, 0
	}
	var st statusTester
	if errors.As(err, &st) {
		for code := http.StatusInternalServerError; code < 600; code++ {
			if st.IsStatus(code) {
				return true, 0
			}
		}
		return st.IsStatus(http.StatusRequestTimeout), 0
	}
	return false, 0
}

// unavailableStatus reports an HTTP status that says "not now" rather
// than "no": a 5xx, a request timeout.
func unavailableStatus(code int) bool {
	return code >= 500 && code < 600 || code == http.StatusRequestTimeout
}

// transient reports a failure of the transport rather than an answer of the
// platform: the call may be retried as is.
func transient(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED)
}

// keyed gives a post the idempotency key of its run's message slot.
func keyed(v render.View, rm Message) render.View {
	v.Key = string(rm.RunID) + "/" + rm.Slot
	return v
}
