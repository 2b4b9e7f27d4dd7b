package health

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestHealthCache(t *testing.T) {
	var calls atomic.Int32
	var fail atomic.Bool
	h := &Cache{Interval: time.Hour, Retry: 20 * time.Millisecond, Check: func(context.Context) error {
		calls.Add(1)
		if fail.Load() {
			return errors.New("auth.test: invalid_auth")
		}
		return nil
	}}
	if err := h.Last(t.Context()); !errors.Is(err, ErrPending) {
		t.Fatalf("before the first check: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { h.Run(ctx); close(done) }()
	waitFor(t, "the first check", func() bool { return h.Last(t.Context()) == nil })
	for range 50 {
		if err := h.Last(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("checks after 50 reads = %d, want 1", n)
	}
	cancel()
	<-done

	// A failing check is reported, and retried soon.
	calls.Store(0)
	fail.Store(true)
	h = &Cache{Interval: time.Hour, Retry: 20 * time.Millisecond, Check: h.Check}
	ctx, cancel = context.WithCancel(t.Context())
	defer cancel()
	go h.Run(ctx)
	waitFor(t, "the failure reported", func() bool {
		err := h.Last(t.Context())
		return err != nil && strings.Contains(err.Error(), "invalid_auth")
	})
	waitFor(t, "a retry", func() bool { return calls.Load() >= 2 })
	fail.Store(false)
	waitFor(t, "recovery", func() bool { return h.Last(t.Context()) == nil })
}

func TestHandler(t *testing.T) {
	dbErr := error(nil)
	srv := httptest.NewServer(Handler([]Check{
		{"database", func(context.Context) error { return dbErr }},
		{"slack", func(context.Context) error { return nil }},
	}))
	defer srv.Close()
	get := func() (int, string) {
		res, err := http.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := get(); code != 200 || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/healthz = %d %s", code, body)
	}
	dbErr = errors.New("connection refused")
	if code, body := get(); code != 503 || !strings.Contains(body, `"database":"connection refused"`) || !strings.Contains(body, `"slack":"ok"`) {
		t.Errorf("/healthz with the database down = %d %s", code, body)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s (scaled by
// THREADLINE_TEST_TIMEOUT_SCALE).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	scale := 1.0
	if v, err := strconv.ParseFloat(os.Getenv("THREADLINE_TEST_TIMEOUT_SCALE"), 64); err == nil && v > 0 {
		scale = v
	}
	deadline := time.Now().Add(time.Duration(float64(10*time.Second) * scale))
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConnectorRetriesThenConnects: failures that are not final are retried
// with growing waits while Err says connecting; a final one is returned at
// once.
func TestConnectorRetriesThenConnects(t *testing.T) {
	c := &Connector{Name: "slack", First: time.Millisecond, Max: 4 * time.Millisecond, Log: slog.New(slog.DiscardHandler)}
	var calls int
	seen := make(chan error, 10)
	err := c.Run(t.Context(), func(context.Context) error {
		calls++
		seen <- c.Err()
		if calls < 4 {
			return errors.New("dial tcp: connection refused")
		}
		return nil
	}, func(error) bool { return false })
	if err != nil || calls != 4 {
		t.Fatalf("Run = %v after %d calls, want nil after 4", err, calls)
	}
	if e := <-seen; e != nil {
		t.Errorf("before the first attempt: %v", e)
	}
	if e := <-seen; e == nil || !strings.Contains(e.Error(), "connecting: slack unreachable (attempt 1, next in 1ms): dial tcp: connection refused") {
		t.Errorf("while retrying: %v", e)
	}
	<-seen
	if e := <-seen; e == nil || !strings.Contains(e.Error(), "attempt 3, next in 4ms") {
		t.Errorf("the wait does not grow to Max: %v", e)
	}
	if c.Err() != nil {
		t.Errorf("after connecting: %v", c.Err())
	}
	rejected := errors.New("invalid_auth")
	calls = 0
	err = c.Run(t.Context(), func(context.Context) error { calls++; return rejected }, func(err error) bool { return err == rejected })
	if !errors.Is(err, rejected) || calls != 1 {
		t.Errorf("a final error: %v after %d calls", err, calls)
	}
}
