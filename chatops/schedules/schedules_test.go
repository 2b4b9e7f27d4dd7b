package schedules_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/schedules"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// starter records the threads started and the notes posted. While hold is
// set, StartThread waits for it to close.
type starter struct {
	mu      sync.Mutex
	started []string // "place prompt by"
	notes   []string
	n       int
	hold    chan struct{}
	entered chan struct{}
}

func (f *starter) StartThread(ctx context.Context, p chatops.Place, by, agentName, project, prompt string) (agent.ChatID, error) {
	f.mu.Lock()
	hold := f.hold
	f.n++
	id := agent.ChatID(fmt.Sprintf("chat-%d", f.n))
	f.started = append(f.started, fmt.Sprintf("%s/%s %s|%s|%s|%s", p.Workspace, p.Channel, prompt, by, agentName, project))
	f.mu.Unlock()
	if hold != nil {
		f.entered <- struct{}{}
		<-hold
	}
	return id, nil
}

func (f *starter) Notice(ctx context.Context, p chatops.Place, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.notes = append(f.notes, p.Channel+" "+text)
	return nil
}

func (f *starter) counts() (started, notes int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started), len(f.notes)
}

// clock is the injected clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

var base = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC) // a Monday

func at(hms string) time.Time {
	d, err := time.ParseDuration(hms)
	if err != nil {
		panic(err)
	}
	return base.Add(d)
}

func addSchedule(t *testing.T, st *store.Store, name, catchup string) {
	t.Helper()
	if err := st.AddSchedule(t.Context(), store.Schedule{Name: name, Cron: "*/5 * * * *", Platform: "slack", Workspace: "T1",
		Channel: "C1", Agent: "claude", Project: "web", Prompt: "check the build", Catchup: catchup, CreatedAt: base}); err != nil {
		t.Fatal(err)
	}
}

func newScheduler(st *store.Store, f *starter, c *clock, owner string) *schedules.Scheduler {
	return schedules.New(st, f, schedules.Options{Owner: owner, Interval: 15 * time.Second, Now: c.Now}, nil)
}

// tick moves the clock to t and runs one pass of each scheduler, waiting for
// their firings.
func tick(t *testing.T, c *clock, tm time.Time, ss ...*schedules.Scheduler) {
	t.Helper()
	c.set(tm)
	for _, s := range ss {
		s.Tick(t.Context())
	}
	for _, s := range ss {
		s.Wait()
	}
}

func TestFiresOncePerOccurrence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		addSchedule(t, st, "build", "")
		f, c := &starter{}, &clock{}
		s := newScheduler(st, f, c, "h:1")
		for _, tm := range []string{"10s", "4m59s", "5m1s", "5m16s", "5m31s", "9m59s", "10m0s", "10m14s"} {
			tick(t, c, at(tm), s)
		}
		if want := []string{"T1/C1 check the build|Schedule build|claude|web", "T1/C1 check the build|Schedule build|claude|web"}; !slices.Equal(f.started, want) {
			t.Fatalf("started %q, want %q", f.started, want)
		}
		fs, err := st.ScheduleFirings(t.Context(), "build", 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 2 || !fs[0].Occurrence.Equal(at("10m")) || !fs[1].Occurrence.Equal(at("5m")) ||
			fs[0].State != store.FiringStarted || fs[0].ChatID != "chat-2" || fs[0].Owner != "h:1" {
			t.Errorf("firings = %+v", fs)
		}
	})
}

func TestTimeZone(t *testing.T) {
	sc := store.Schedule{Cron: "0 9 * * 1-5", TZ: "Europe/Berlin"}
	next, err := schedules.Next(sc, base) // Monday 10:00 UTC = 11:00 in Berlin
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 12, 8, 8, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("Next = %v, want %v", next, want)
	}
	if _, _, err := schedules.Parse("0 9 * *", ""); err == nil {
		t.Error("Parse of four fields: no error")
	}
	if _, _, err := schedules.Parse("0 9 * * *", "Mars/Olympus"); err == nil {
		t.Error("Parse with an unknown zone: no error")
	}
}

// Two replicas over one database fire each occurrence exactly once.
func TestTwoReplicasFireOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		addSchedule(t, st, "build", "")
		f, c := &starter{}, &clock{}
		a, b := newScheduler(st, f, c, "a:1"), newScheduler(st, f, c, "b:1")
		for _, tm := range []string{"10s", "5m1s", "5m2s", "10m3s", "15m0s", "15m20s"} {
			c.set(at(tm))
			var wg sync.WaitGroup
			for _, s := range []*schedules.Scheduler{a, b} {
				wg.Go(func() { s.Tick(t.Context()) })
			}
			wg.Wait()
			a.Wait()
			b.Wait()
		}
		if n, _ := f.counts(); n != 3 {
			t.Fatalf("started %d threads, want 3 (5m, 10m, 15m): %q", n, f.started)
		}
		// A manual run is claimed by one of them too.
		if err := st.RequestScheduleRun(t.Context(), "build", at("16m"), "cli"); err != nil {
			t.Fatal(err)
		}
		tick(t, c, at("16m1s"), a, b)
		if n, _ := f.counts(); n != 4 || !strings.Contains(f.started[3], "(run by cli)") {
			t.Fatalf("after the manual run: %q", f.started)
		}
	})
}

// A firing while the previous one is still starting its thread, or while
// its chat's run goes, is skipped and noted in the channel.
func TestOverlapSkipped(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		addSchedule(t, st, "build", "")
		f, c := &starter{hold: make(chan struct{}), entered: make(chan struct{})}, &clock{}
		s := newScheduler(st, f, c, "h:1")
		tick(t, c, at("10s"), s)
		c.set(at("5m1s"))
		s.Tick(ctx)
		<-f.entered // the 5m firing is starting its thread
		c.set(at("10m1s"))
		s.Tick(ctx)
		close(f.hold)
		s.Wait()
		started, notes := f.counts()
		if started != 1 || notes != 1 || !strings.Contains(f.notes[0], "Schedule build: skipped the run of 2026-12-07 10:10 UTC") {
			t.Fatalf("started %q, notes %q", f.started, f.notes)
		}

		// chat-1's run goes on (on whichever replica): the next one skips too.
		f.hold = nil
		if err := st.CreateChat(ctx, &store.Chat{ID: "chat-1"}); err != nil {
			t.Fatal(err)
		}
		if err := st.StartRun(ctx, runhub.RunRecord{ID: "r1", ChatID: "chat-1", Agent: "claude", Owner: "h:1", StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		tick(t, c, at("15m1s"), s)
		if started, notes := f.counts(); started != 1 || notes != 2 {
			t.Fatalf("while chat-1 runs: started %q, notes %q", f.started, f.notes)
		}
		if err := st.FinishRun(ctx, "r1", runhub.StatusCompleted, nil, ""); err != nil {
			t.Fatal(err)
		}
		tick(t, c, at("20m1s"), s)
		if started, notes := f.counts(); started != 2 || notes != 2 {
			t.Fatalf("after chat-1's run: started %q, notes %q", f.started, f.notes)
		}
		fs, err := st.ScheduleFirings(ctx, "build", 10)
		if err != nil {
			t.Fatal(err)
		}
		var states []string
		for _, fr := range fs {
			states = append(states, fr.State)
		}
		if want := []string{"started", "skipped", "skipped", "started"}; !slices.Equal(states, want) {
			t.Errorf("firing states (newest first) %q, want %q", states, want)
		}
	})
}

// Occurrences missed while no replica ran: catchup once runs one firing at
// start, skip runs none; the next occurrence fires as usual.
func TestCatchup(t *testing.T) {
	for _, tc := range []struct {
		catchup string
		want    []time.Time // occurrences fired after the pause
	}{
		{store.CatchupOnce, []time.Time{at("30m"), at("35m")}},
		{store.CatchupSkip, []time.Time{at("35m")}},
	} {
		t.Run(tc.catchup, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, st *store.Store) {
				addSchedule(t, st, "build", tc.catchup)
				f, c := &starter{}, &clock{}
				tick(t, c, at("5m1s"), newScheduler(st, f, c, "h:1"))
				// The process stops; another starts at 10:31.
				s := newScheduler(st, f, c, "h:2")
				tick(t, c, at("31m"), s)
				tick(t, c, at("35m2s"), s)
				fs, err := st.ScheduleFirings(t.Context(), "build", 10)
				if err != nil {
					t.Fatal(err)
				}
				var got []time.Time
				for _, fr := range slices.Backward(fs) {
					if fr.Owner == "h:2" {
						got = append(got, fr.Occurrence)
					}
				}
				if !slices.EqualFunc(got, tc.want, time.Time.Equal) {
					t.Errorf("fired after the pause %v, want %v", got, tc.want)
				}
				if n, _ := f.counts(); n != 1+len(tc.want) {
					t.Errorf("started %d threads, want %d", n, 1+len(tc.want))
				}
			})
		})
	}
}

// Run ticks at start and then each time its injected After fires, and ends
// with its context.
func TestRunTicksOnItsClock(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	addSchedule(t, st, "build", "")
	f, c := &starter{}, &clock{}
	c.set(at("10s"))
	wake := make(chan time.Time)
	s := schedules.New(st, f, schedules.Options{Owner: "h:1", Interval: 15 * time.Second, Now: c.Now,
		After: func(time.Duration) <-chan time.Time { return wake }}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	c.set(at("5m1s"))
	wake <- at("5m1s") // taken once the first tick is over
	chatopstest.WaitFor(t, "the 10:05 firing", func() bool { n, _ := f.counts(); return n == 1 })
	cancel()
	<-done
	if n, _ := f.counts(); n != 1 {
		t.Errorf("started %d threads, want 1", n)
	}
}
