package store_test

import (
	"errors"
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
	u := storetest.URL(t, store.DialectPostgres)
	out := make([]*store.RateLimits, n)
	for i := range out {
		st, err := store.OpenAndMigrate(t.Context(), u, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		if out[i], err = st.RateLimits(); err != nil {
			t.Fatal(err)
		}
	}
	return out
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
