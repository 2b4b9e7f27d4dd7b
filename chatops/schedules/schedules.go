// Package schedules fires the schedules of the store (threadline schedule
// add): at each occurrence of a schedule's cron expression, read in its time
// zone, it starts a new thread in the schedule's channel with its prompt.
//
// The rules, all decided here and tested with an injected clock:
//   - Exactly one replica fires an occurrence: the firing is claimed in the
//     database first (a row keyed by schedule and occurrence); the loser skips.
//   - A schedule never overlaps itself: a firing while its previous one still
//     runs (its thread being started, or its chat's run going) is skipped and
//     noted in the channel.
//   - Occurrences missed while no replica ran are run once at start (the
//     latest of them, catchup once) or not at all (catchup skip, the default).
//   - A firing starts its own thread and chat: it never waits for or blocks
//     an interactive chat, and the scheduler's loop never waits for a firing.
package schedules

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// ErrBadSchedule wraps an expression or time zone that cannot be read.
var ErrBadSchedule = errors.New("schedules: bad schedule")

// Store is what the scheduler needs of the database (*store.Store).
type Store interface {
	Schedules(ctx context.Context) ([]store.Schedule, error)
	LastScheduleOccurrence(ctx context.Context, name string) (time.Time, error)
	ClaimScheduleFiring(ctx context.Context, name string, occurrence time.Time, owner string) (bool, error)
	RequestedScheduleRuns(ctx context.Context) ([]store.ScheduleFiring, error)
	ClaimScheduleRun(ctx context.Context, name string, occurrence time.Time, owner string) (bool, error)
	FinishScheduleFiring(ctx context.Context, name string, occurrence time.Time, state, chatID, note string) error
	ScheduleFirings(ctx context.Context, name string, limit int) ([]store.ScheduleFiring, error)
	ChatRunning(ctx context.Context, chatID string) (bool, error)
	ChannelWorkspace(ctx context.Context, platform, channel string) (string, error)
}

// Starter starts threads and posts notes (*chatops.Desk).
type Starter interface {
	StartThread(ctx context.Context, place chatops.Place, by, agentName, project, prompt string) (agent.ChatID, error)
	Notice(ctx context.Context, place chatops.Place, text string) error
}

// Options configure a Scheduler.
type Options struct {
	// Owner names this replica in its claims (host:pid).
	Owner string
	// Interval is how often the schedules are read (default 15 s). An
	// occurrence fires within Interval of its time.
	Interval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// After waits (default time.After); tests inject both.
	After func(d time.Duration) <-chan time.Time
	// StaleFiring is how long a claimed firing whose thread is not started
	// yet counts as running (default 10 minutes): past it its owner is
	// taken for dead.
	StaleFiring time.Duration
}

// Scheduler fires the store's schedules. Run drives it; Tick is one pass.
type Scheduler struct {
	store   Store
	starter Starter
	opts    Options
	log     *slog.Logger

	mu       sync.Mutex
	cursors  map[string]cursor // by schedule name
	inflight map[string]bool   // schedules whose thread this process is starting
	wg       sync.WaitGroup
}

// cursor is how far a schedule's occurrences are handled by this process.
type cursor struct {
	spec string    // the expression and zone it was computed for
	upTo time.Time // occurrences at or before it are handled
}

// New returns a scheduler over st that starts threads through starter.
func New(st Store, starter Starter, opts Options, logger *slog.Logger) *Scheduler {
	if opts.Interval <= 0 {
		opts.Interval = 15 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.StaleFiring <= 0 {
		opts.StaleFiring = 10 * time.Minute
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Scheduler{store: st, starter: starter, opts: opts, log: logger.With(logkey.Component, "schedules"),
		cursors: map[string]cursor{}, inflight: map[string]bool{}}
}

// Parse reads a five-field cron expression (or a descriptor such as
// "@daily") in the time zone tz ("" is UTC). Errors wrap ErrBadSchedule.
func Parse(expr, tz string) (cron.Schedule, *time.Location, error) {
	if strings.Contains(expr, "TZ=") {
		return nil, nil, fmt.Errorf("%w: give the time zone with --tz, not in the expression", ErrBadSchedule)
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: time zone %q: %w", ErrBadSchedule, tz, err)
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %q: %w", ErrBadSchedule, expr, err)
	}
	return sched, loc, nil
}

// Next returns the schedule's first occurrence after t (zero when it has
// none).
func Next(sc store.Schedule, t time.Time) (time.Time, error) {
	sched, loc, err := Parse(sc.Cron, sc.TZ)
	if err != nil {
		return time.Time{}, err
	}
	return sched.Next(t.In(loc)).UTC(), nil
}

// Run ticks every Interval until ctx ends, then waits for the firings under
// way.
func (s *Scheduler) Run(ctx context.Context) {
	defer s.Wait()
	for {
		s.Tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-s.opts.After(s.opts.Interval):
		}
	}
}

// Wait waits for the firings under way.
func (s *Scheduler) Wait() { s.wg.Wait() }

// Tick is one pass: it claims the occurrences due now and the manual runs
// asked for, and starts their threads in the background.
func (s *Scheduler) Tick(ctx context.Context) {
	list, err := s.store.Schedules(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "read schedules", logkey.Err, err)
		return
	}
	now := s.opts.Now().UTC()
	byName := make(map[string]store.Schedule, len(list))
	for _, sc := range list {
		byName[sc.Name] = sc
		s.tickOne(ctx, sc, now)
	}
	s.mu.Lock()
	for name := range s.cursors {
		if _, ok := byName[name]; !ok {
			delete(s.cursors, name)
		}
	}
	s.mu.Unlock()
	s.manualRuns(ctx, byName)
}

// maxSteps bounds the walk over a schedule's missed occurrences (an every
// minute schedule down for a year).
const maxSteps = 600_000

// tickOne handles one schedule's occurrences up to now.
func (s *Scheduler) tickOne(ctx context.Context, sc store.Schedule, now time.Time) {
	sched, loc, err := Parse(sc.Cron, sc.TZ)
	if err != nil {
		s.log.WarnContext(ctx, "unreadable schedule", logkey.Key, sc.Name, logkey.Err, err)
		return
	}
	next := func(t time.Time) time.Time { return sched.Next(t.In(loc)).UTC() }
	spec := sc.Cron + "\x00" + sc.TZ + "\x00" + sc.CreatedAt.String()
	s.mu.Lock()
	cur, seen := s.cursors[sc.Name]
	s.mu.Unlock()
	if !seen || cur.spec != spec {
		var ok bool
		if cur, ok = s.firstSight(ctx, sc, now, next); !ok {
			return
		}
		cur.spec = spec
	}
	// Due now: the latest occurrence in (upTo, now]; a late tick that finds
	// several fires only the latest (the others would overlap it).
	var due time.Time
	for o, n := next(cur.upTo), 0; !o.IsZero() && !o.After(now) && n < maxSteps; o, n = next(o), n+1 {
		due = o
	}
	if !due.IsZero() {
		s.claimAndFire(ctx, sc, due, "")
	}
	if now.After(cur.upTo) {
		cur.upTo = now
	}
	s.mu.Lock()
	s.cursors[sc.Name] = cur
	s.mu.Unlock()
}

// firstSight places a schedule's cursor when this process first sees it: the
// occurrences since its last claimed one (or its creation) and older than
// two intervals were missed while no replica ran; with catchup once the
// latest of them fires now. The newer ones are due as usual.
func (s *Scheduler) firstSight(ctx context.Context, sc store.Schedule, now time.Time, next func(time.Time) time.Time) (cursor, bool) {
	last, err := s.store.LastScheduleOccurrence(ctx, sc.Name)
	if err != nil {
		s.log.WarnContext(ctx, "read last occurrence", logkey.Key, sc.Name, logkey.Err, err)
		return cursor{}, false
	}
	from := sc.CreatedAt.UTC()
	if last.After(from) {
		from = last
	}
	grace := now.Add(-2 * s.opts.Interval)
	var missed time.Time
	for o, n := next(from), 0; !o.IsZero() && !o.After(grace) && n < maxSteps; o, n = next(o), n+1 {
		missed = o
	}
	if !missed.IsZero() {
		if sc.Catchup == store.CatchupOnce {
			s.log.InfoContext(ctx, "schedule catches up", logkey.Key, sc.Name, logkey.Slot, missed)
			s.claimAndFire(ctx, sc, missed, "")
		} else {
			s.log.InfoContext(ctx, "schedule skips missed occurrences", logkey.Key, sc.Name, logkey.Slot, missed)
		}
	}
	if grace.After(from) {
		from = grace
	}
	return cursor{upTo: from}, true
}

// manualRuns claims the requested manual runs of known schedules and fires
// them.
func (s *Scheduler) manualRuns(ctx context.Context, byName map[string]store.Schedule) {
	reqs, err := s.store.RequestedScheduleRuns(ctx)
	if err != nil {
		s.log.WarnContext(ctx, "read requested schedule runs", logkey.Err, err)
		return
	}
	for _, r := range reqs {
		sc, ok := byName[r.Schedule]
		if !ok {
			continue
		}
		won, err := s.store.ClaimScheduleRun(ctx, r.Schedule, r.Occurrence, s.opts.Owner)
		if err != nil {
			s.log.WarnContext(ctx, "claim schedule run", logkey.Key, r.Schedule, logkey.Err, err)
			continue
		}
		if won {
			s.fire(ctx, sc, r.Occurrence, r.By)
		}
	}
}

// claimAndFire claims the cron occurrence and, when this replica won, fires it.
func (s *Scheduler) claimAndFire(ctx context.Context, sc store.Schedule, occ time.Time, by string) {
	won, err := s.store.ClaimScheduleFiring(ctx, sc.Name, occ, s.opts.Owner)
	if err != nil {
		s.log.WarnContext(ctx, "claim schedule firing", logkey.Key, sc.Name, logkey.Slot, occ, logkey.Err, err)
		return
	}
	if won {
		s.fire(ctx, sc, occ, by)
	}
}

// fire starts the claimed firing's thread in the background, or skips it
// when the schedule's previous firing still runs.
func (s *Scheduler) fire(ctx context.Context, sc store.Schedule, occ time.Time, by string) {
	s.mu.Lock()
	busy := s.inflight[sc.Name]
	if !busy {
		s.inflight[sc.Name] = true
	}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if busy {
			s.skip(ctx, sc, occ)
			return
		}
		defer func() {
			s.mu.Lock()
			delete(s.inflight, sc.Name)
			s.mu.Unlock()
		}()
		running, err := s.previousRuns(ctx, sc.Name, occ)
		if err != nil {
			s.finish(ctx, sc.Name, occ, store.FiringFailed, "", err.Error())
			return
		}
		if running {
			s.skip(ctx, sc, occ)
			return
		}
		label := "Schedule " + sc.Name
		if by != "" {
			label += " (run by " + by + ")"
		}
		chat, err := s.starter.StartThread(ctx, s.place(ctx, sc), label, sc.Agent, sc.Project, sc.Prompt)
		if err != nil {
			s.log.WarnContext(ctx, "start scheduled thread", logkey.Key, sc.Name, logkey.Slot, occ, logkey.Err, err)
			s.finish(ctx, sc.Name, occ, store.FiringFailed, string(chat), err.Error())
			return
		}
		s.log.InfoContext(ctx, "schedule fired", logkey.Key, sc.Name, logkey.Slot, occ, logkey.ChatID, chat)
		s.finish(ctx, sc.Name, occ, store.FiringStarted, string(chat), "")
	}()
}

// previousRuns reports whether the schedule's latest firing before occ still
// runs: its thread is being started (and its claim is fresh) or its chat has
// a running run.
func (s *Scheduler) previousRuns(ctx context.Context, name string, occ time.Time) (bool, error) {
	fs, err := s.store.ScheduleFirings(ctx, name, 50)
	if err != nil {
		return false, err
	}
	for _, f := range fs {
		if f.Occurrence.Equal(occ) {
			continue
		}
		switch f.State {
		case store.FiringFiring:
			// UpdatedAt is the database host's clock, not the injected one.
			return time.Since(f.UpdatedAt) < s.opts.StaleFiring, nil
		case store.FiringStarted:
			if f.ChatID == "" {
				return false, nil
			}
			return s.store.ChatRunning(ctx, f.ChatID)
		}
	}
	return false, nil
}

// skip records the firing as skipped and notes it in the channel.
func (s *Scheduler) skip(ctx context.Context, sc store.Schedule, occ time.Time) {
	const note = "the previous run is still going"
	s.log.InfoContext(ctx, "schedule firing skipped", logkey.Key, sc.Name, logkey.Slot, occ)
	s.finish(ctx, sc.Name, occ, store.FiringSkipped, "", note)
	when := occ.Format("2006-01-02 15:04 MST")
	if _, loc, err := Parse(sc.Cron, sc.TZ); err == nil {
		when = occ.In(loc).Format("2006-01-02 15:04 MST")
	}
	place := s.place(ctx, sc)
	text := fmt.Sprintf("Schedule %s: skipped the run of %s: %s.", sc.Name, when, note)
	if err := s.starter.Notice(ctx, place, text); err != nil {
		s.log.WarnContext(ctx, "post skipped schedule note", logkey.Key, sc.Name, logkey.Err, err)
	}
}

// place is where the schedule's threads start. A schedule without a
// workspace (a Slack team id the operator did not give) takes the one of the
// channel's latest bound thread, so replies in its threads find their chat.
func (s *Scheduler) place(ctx context.Context, sc store.Schedule) chatops.Place {
	p := chatops.Place{Platform: sc.Platform, Workspace: sc.Workspace, Channel: sc.Channel}
	if p.Workspace == "" {
		w, err := s.store.ChannelWorkspace(ctx, sc.Platform, sc.Channel)
		if err != nil {
			s.log.WarnContext(ctx, "read the channel's workspace", logkey.Key, sc.Name, logkey.Err, err)
		}
		p.Workspace = w
	}
	return p
}

// finish records the firing's end, also when ctx ended meanwhile (serve
// stopping while a thread was being started).
func (s *Scheduler) finish(ctx context.Context, name string, occ time.Time, state, chatID, note string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := s.store.FinishScheduleFiring(ctx, name, occ, state, chatID, note); err != nil {
		s.log.WarnContext(ctx, "record schedule firing", logkey.Key, name, logkey.Slot, occ, logkey.Err, err)
	}
}
