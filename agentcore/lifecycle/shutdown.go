// The stop of a serving process, in a fixed and logged order.

package lifecycle

import (
	"context"
	"log/slog"
	"time"
)

// Shutdown is the order a serving process stops in: (1) stop intake (the
// front-ends, the HTTP listeners), (2) detach the relayed runs and interrupt
// the others within Grace, then close the front desk (after the runs ended,
// so that their last state is rendered), (3) stop the liveness loop and flush
// the event writer, (4) close the database. A nil step is skipped; errors are
// logged and the stop goes on.
type Shutdown struct {
	Log   *slog.Logger
	Grace time.Duration

	StopIntake  func()
	Detach      func(ctx context.Context) (int, error)
	CloseDesk   func() error
	StopLive    func()
	FlushEvents func() error
	CloseStore  func() error
}

// Run stops the process's parts in order.
func (s Shutdown) Run() {
	log := s.Log
	log.Info("shutdown 1/4: stop intake")
	if s.StopIntake != nil {
		s.StopIntake()
	}
	log.Info("shutdown 2/4: detach relayed runs, interrupt the others", "deadline", s.Grace)
	if s.Detach != nil {
		ctx, cancel := context.WithTimeout(context.Background(), s.Grace)
		n, err := s.Detach(ctx)
		cancel()
		if err != nil {
			log.Warn("shutdown: runs still ending", "err", err)
		}
		if n > 0 {
			log.Info("shutdown: runs detached, the next start reattaches them", "runs", n)
		}
	}
	warn := func(what string, f func() error) {
		if f == nil {
			return
		}
		if err := f(); err != nil {
			log.Warn("shutdown: "+what, "err", err)
		}
	}
	warn("front desk", s.CloseDesk)
	log.Info("shutdown 3/4: flush the event writer")
	if s.StopLive != nil {
		s.StopLive()
	}
	warn("flush events", s.FlushEvents)
	log.Info("shutdown 4/4: close the database")
	warn("close database", s.CloseStore)
	log.Info("shutdown complete")
}
