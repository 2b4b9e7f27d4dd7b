package store_test

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// sharedLimits opens n stores (n connection pools, as n replicas have) over
// one fresh Postgres schema and returns their rate limits.
func sharedLimits(t *testing.T, n int) []*store.RateLimits {
	t.Helper()
	_, limits := sharedStores(t, n)
	return limits
}

// sharedStores is sharedLimits with the stores (their tables reached with
// DB, to set a bucket's row as a test needs it).
func sharedStores(t *testing.T, n int) ([]*store.Store, []*store.RateLimits) {
	t.Helper()
	u := storetest.URL(t, store.DialectPostgres)
	stores := make([]*store.Store, n)
	limits := make([]*store.RateLimits, n)
	for i := range stores {
		st, err := store.OpenAndMigrate(t.Context(), u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		stores[i] = st
		if limits[i], err = st.RateLimits(); err != nil {
			t.Fatal(err)
		}
	}
	return stores, limits
}

// TestRateLimitsShared: 12 takers on 3 connection pools hammer one bucket
// (burst 5, 1200/min) for a second. Together they get at most burst +
// rate × elapsed tokens (the window measured around all their calls, so it
// holds the database's), and, since they ask all the time, at least half
// of that rate: the bucket refills. Another kind and another workspace
// are buckets of their own.
func TestRateLimitsShared(t *testing.T) {
	if _, err := storetest.Open(t, store.DialectSQLite).RateLimits(); !errors.Is(err, store.ErrNoSharedLimits) {
		t.Fatalf("sqlite: %v", err)
	}
	limits := sharedLimits(t, 3)
	const (
		burst     = 5
		perMinute = 1200.0
		takers    = 4 // per pool
		run       = time.Second
	)
	ctx := t.Context()
	var granted, waits atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, l := range limits {
		for range takers {
			wg.Go(func() {
				for time.Since(start) < run {
					wait, err := l.Take(ctx, "slack|T1", "update", perMinute, burst)
					if err != nil {
						t.Error(err)
						return
					}
					if wait == 0 {
						granted.Add(1)
						continue
					}
					if wait > time.Second/10 {
						t.Errorf("wait %s for a bucket refilling every 50 ms", wait)
						return
					}
					waits.Add(1)
					time.Sleep(min(wait, 10*time.Millisecond)) // a taker's pace, not synchronisation
				}
			})
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	most := burst + perMinute/60*elapsed.Seconds()
	least := burst + perMinute/60*(elapsed.Seconds()-0.1)/2
	t.Logf("%d takers on %d pools: %d tokens in %s (at most %.1f), %d waits", takers*len(limits), len(limits), granted.Load(), elapsed.Round(time.Millisecond), most, waits.Load())
	if g := float64(granted.Load()); g > most || g < least {
		t.Errorf("%.0f tokens in %s, want within [%.1f, %.1f]", g, elapsed, least, most)
	}

	// Other buckets are untouched: a full burst at once.
	for _, b := range []struct{ key, kind string }{{"slack|T1", "post"}, {"slack|T2", "update"}} {
		for i := range burst {
			if wait, err := limits[i%3].Take(ctx, b.key, b.kind, 1, burst); err != nil || wait != 0 {
				t.Fatalf("%s/%s take %d: wait %s, %v", b.key, b.kind, i, wait, err)
			}
		}
		wait, err := limits[0].Take(ctx, b.key, b.kind, 1, burst)
		if err != nil || wait < 50*time.Second || wait > time.Minute {
			t.Fatalf("%s/%s after its burst at 1/min: wait %s, %v", b.key, b.kind, wait, err)
		}
	}
}

// TestRateLimitsPause: a pause on one replica holds every kind of the
// workspace on all (a kind never used before included) for its duration,
// and no other workspace.
func TestRateLimitsPause(t *testing.T) {
	limits := sharedLimits(t, 2)
	ctx := t.Context()
	if wait, err := limits[1].Take(ctx, "slack|T1", "post", 60, 5); err != nil || wait != 0 {
		t.Fatalf("before the pause: %s, %v", wait, err)
	}
	const pause = 400 * time.Millisecond
	paused := time.Now()
	if err := limits[0].Pause(ctx, "slack|T1", pause); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"post", "stop"} {
		wait, err := limits[1].Take(ctx, "slack|T1", kind, 60, 5)
		if err != nil || wait <= 0 || wait > pause {
			t.Fatalf("%s while paused: wait %s, %v", kind, wait, err)
		}
	}
	if wait, err := limits[1].Take(ctx, "slack|T2", "post", 60, 5); err != nil || wait != 0 {
		t.Fatalf("another workspace: %s, %v", wait, err)
	}
	// Wait as told until a token comes: never before the pause's end.
	for {
		wait, err := limits[1].Take(ctx, "slack|T1", "post", 60, 5)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			break
		}
		time.Sleep(wait)
	}
	if took := time.Since(paused); took < pause {
		t.Fatalf("a token after %s of a %s pause", took, pause)
	}
	if err := limits[0].Pause(ctx, "slack|T1", -time.Second); err != nil {
		t.Fatal(err) // a past pause changes nothing
	}
	if wait, err := limits[0].Take(ctx, "slack|T1", "update", 60, 5); err != nil || wait != 0 {
		t.Fatalf("after the pause: %s, %v", wait, err)
	}
	if _, err := limits[0].Take(ctx, "slack|T1", "", 60, 5); err == nil {
		t.Fatal("the pause row's kind was taken from")
	}
}

// TestRateLimitsClockBack: a bucket whose refilled_at is ahead of the
// database's clock (the clock stepped back, or a failover reached a server
// whose clock is behind) still refills: the first take counts no time and
// moves refilled_at to the clock, and a token comes one refill interval
// later, not once the clock has caught up an hour later.
func TestRateLimitsClockBack(t *testing.T) {
	stores, limits := sharedStores(t, 1)
	ctx := t.Context()
	const (
		key       = "slack|T1"
		perMinute = 600.0 // a token every 100 ms
	)
	if wait, err := limits[0].Take(ctx, key, "update", perMinute, 1); err != nil || wait != 0 {
		t.Fatalf("first take: %s, %v", wait, err)
	}
	if _, err := stores[0].DB().ExecContext(ctx, `UPDATE rate_limits SET tokens = 0, refilled_at = clock_timestamp() + interval '1 hour'
		WHERE bucket = $1 AND kind = 'update'`, key); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 5 {
		wait, err := limits[0].Take(ctx, key, "update", perMinute, 1)
		if err != nil {
			t.Fatal(err)
		}
		if wait == 0 {
			t.Logf("a token %s after the clock went an hour back (take %d)", time.Since(start).Round(time.Millisecond), i+1)
			return
		}
		if wait > time.Second {
			t.Fatalf("take %d: wait %s for a bucket refilling every 100 ms", i+1, wait)
		}
		time.Sleep(wait) // as told
	}
	t.Fatalf("no token in 5 takes (%s) after the clock went an hour back", time.Since(start).Round(time.Millisecond))
}

// TestRateLimitsOneClock: a take reads the database's clock once, so a
// grant always spends its token: with burst 1 a granted take leaves the
// bucket at exactly 0 (not above, a token not spent; not below, in debt).
// Four takers, a bucket each, ask without pause for 2 s at 300 tokens a
// second, so most takes are refused and each grant comes as its refill
// crosses 1: the statement before, which read the clock apart for the
// refill, the grant and refilled_at, failed this in 9 of 9 runs (1-7 grants
// of about 1600 off); the review's 60 s run had 5 of 4893 grants spend
// nothing and 15 go into debt.
func TestRateLimitsOneClock(t *testing.T) {
	stores, limits := sharedStores(t, 1)
	ctx := t.Context()
	const key = "slack|T1"
	var grants, takes, wrong atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, kind := range []string{"post", "update", "append", "stop"} {
		wg.Go(func() {
			for time.Since(start) < 2*time.Second {
				takes.Add(1)
				wait, err := limits[0].Take(ctx, key, kind, 18000, 1)
				if err != nil {
					t.Error(err)
					return
				}
				if wait != 0 {
					continue
				}
				grants.Add(1)
				var tokens float64
				if err := stores[0].DB().GetContext(ctx, &tokens, `SELECT tokens FROM rate_limits WHERE bucket = $1 AND kind = $2`, key, kind); err != nil {
					t.Error(err)
					return
				}
				if tokens != 0 && wrong.Add(1) <= 3 {
					t.Errorf("%s granted, tokens left %g (want 0 with burst 1)", kind, tokens)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d takes, %d grants, %d left the bucket other than empty", takes.Load(), grants.Load(), wrong.Load())
	if grants.Load() < 500 {
		t.Errorf("only %d grants in 2 s at 4 x 300/s: too few to tell", grants.Load())
	}
}

// TestRateLimitsPauseWhileWaiting: a pause committed while a take waits
// for its bucket's row (another take holds it) holds that take too: the
// pause is read once the row is locked, not from the statement's snapshot.
func TestRateLimitsPauseWhileWaiting(t *testing.T) {
	stores, limits := sharedStores(t, 2)
	ctx := t.Context()
	const key = "slack|T1"
	// The workspace has a pause row (a pause long over) and a post bucket.
	if err := limits[0].Pause(ctx, key, -time.Second); err != nil {
		t.Fatal(err)
	}
	if wait, err := limits[0].Take(ctx, key, "post", 60, 5); err != nil || wait != 0 {
		t.Fatalf("first take: %s, %v", wait, err)
	}
	tx, err := stores[0].DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	var holder int
	if err := tx.GetContext(ctx, &holder, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, `SELECT 1 FROM rate_limits WHERE bucket = $1 AND kind = 'post' FOR UPDATE`, key); err != nil {
		t.Fatal(err)
	}
	type result struct {
		wait time.Duration
		err  error
	}
	done := make(chan result, 1)
	go func() {
		wait, err := limits[1].Take(ctx, key, "post", 60, 5)
		done <- result{wait, err}
	}()
	// Progress: the take is blocked on the held row.
	for deadline := time.Now().Add(10 * time.Second); ; {
		var blocked int
		if err := stores[0].DB().GetContext(ctx, &blocked, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, holder); err != nil {
			t.Fatal(err)
		}
		if blocked > 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the take did not wait for the held row: %s, %v", r.wait, r.err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the take never waited for the held row")
		}
	}
	const pause = time.Minute
	if err := limits[0].Pause(ctx, key, pause); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.wait <= pause/2 || r.wait > pause {
		t.Fatalf("a take that waited through a %s pause's start: wait %s, %v", pause, r.wait, r.err)
	}
}

// TestRateLimitsTinyRate: a rate so low that its wait does not fit a
// time.Duration answers a long wait (asking again hourly), not 1 ms (a
// polling loop); a rate that is no number is refused.
func TestRateLimitsTinyRate(t *testing.T) {
	limits := sharedLimits(t, 1)
	ctx := t.Context()
	if wait, err := limits[0].Take(ctx, "slack|T1", "post", 1e-300, 1); err != nil || wait != 0 {
		t.Fatalf("first take: %s, %v", wait, err)
	}
	wait, err := limits[0].Take(ctx, "slack|T1", "post", 1e-300, 1)
	if err != nil || wait < time.Minute {
		t.Fatalf("after the only token at 1e-300/min: wait %s, %v", wait, err)
	}
	if _, err := limits[0].Take(ctx, "slack|T1", "post", math.NaN(), 1); err == nil {
		t.Fatal("a NaN rate was taken from")
	}
}
