// Connecting to a platform at start: retried with backoff while it is
// unreachable, refused at once when it rejects the credentials.

package health

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// Connector retries a platform's first connection with exponential backoff
// (First, doubling up to Max) until it succeeds, ctx ends, or the platform
// rejects it (Final). Meanwhile Err says "connecting", for /healthz.
type Connector struct {
	// Name is the platform, for the log and Err.
	Name       string
	First, Max time.Duration
	Log        *slog.Logger

	mu      sync.Mutex
	pending error
}

// Run calls connect until it returns nil (Run returns nil), ctx ends (nil)
// or final(err) holds (that error). Every other error is logged and retried.
func (c *Connector) Run(ctx context.Context, connect func(ctx context.Context) error, final func(error) bool) error {
	wait := c.First
	for attempt := 1; ; attempt++ {
		err := connect(ctx)
		if err == nil || ctx.Err() != nil {
			c.set(nil)
			return nil
		}
		if final(err) {
			c.set(nil)
			return err
		}
		c.set(fmt.Errorf("connecting: %s unreachable (attempt %d, next in %v): %w", c.Name, attempt, wait, err))
		c.Log.WarnContext(ctx, "platform unreachable; retrying", logkey.Platform, c.Name, "attempt", attempt, "retry_in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			c.set(nil)
			return nil
		case <-t.C:
		}
		wait = min(2*wait, c.Max)
	}
}

func (c *Connector) set(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pending = err
}

// Err is the last failure while Run is retrying, else nil.
func (c *Connector) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending
}
