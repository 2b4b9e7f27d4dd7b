// Package health is serve's readiness: named checks (the database, each
// chat front-end), those that reach a platform run in the background by a
// Cache so that a request never does, and the /healthz handler.
package health

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Check is one named readiness check of /healthz.
type Check struct {
	Name  string
	Check func(ctx context.Context) error
}

// Timeout bounds one check.
const Timeout = 5 * time.Second

// ErrPending is a cached check's result before its first check ended.
var ErrPending = errors.New("not checked yet")

// Cache runs Check in the background (Run) and keeps the last result for
// /healthz (Last): every Interval while it passes, every Retry while it fails.
type Cache struct {
	Check           func(ctx context.Context) error
	Interval, Retry time.Duration

	mu      sync.Mutex
	err     error
	checked bool
}

// Run checks now, then every Interval (Retry after a failure), until ctx
// ends.
func (h *Cache) Run(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cctx, cancel := context.WithTimeout(ctx, Timeout)
		err := h.Check(cctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		h.mu.Lock()
		h.err, h.checked = err, true
		h.mu.Unlock()
		if err != nil {
			t.Reset(h.Retry)
		} else {
			t.Reset(h.Interval)
		}
	}
}

// Last is the result of the latest check; it has a check's signature.
func (h *Cache) Last(context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.checked {
		return ErrPending
	}
	return h.err
}

// Handler serves /healthz: 200 and {"name":"ok",...} when every check
// passes, else 503 with each failing check's error.
func Handler(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), Timeout)
		defer cancel()
		status, code := map[string]string{}, http.StatusOK
		for _, c := range checks {
			if err := c.Check(ctx); err != nil {
				status[c.Name], code = err.Error(), http.StatusServiceUnavailable
			} else {
				status[c.Name] = "ok"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(status)
	})
}
