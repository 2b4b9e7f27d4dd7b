// Panics in a run's goroutine: logged with their stack, told in the chat as a
// failed run, and the chat released, so one adapter bug neither takes the bot
// down nor wedges the chat.

package prompt

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// PanicText is the run.failed text of a run whose adapter panicked; the
// panic and its stack are in the log.
const PanicText = "internal error in the agent adapter; see the log"

// errAdapterPanic is the run's error after a panic in the provider's Run.
var errAdapterPanic = fmt.Errorf("%w: %s", agent.ErrRunFailed, PanicText)

// runProvider calls prov.Run, turning a panic in it (or in the emit it calls)
// into errAdapterPanic, so the run ends through execute's usual path. A panic
// in a goroutine the provider starts itself cannot be caught here.
func (s *Service) runProvider(ctx context.Context, run *Run, prov agent.Provider, req agent.RunRequest, emit func(agent.Event)) (err error) {
	defer func() {
		if p := recover(); p != nil {
			s.logPanic(ctx, run, p)
			err = errAdapterPanic
		}
	}()
	return prov.Run(procrun.WithIdleTimeout(ctx, req.IdleTimeout), req, emit)
}

// executeSafely is execute with a last line of defence: a panic anywhere in
// it (outside the provider call, which runProvider covers) is logged, the
// run fails with PanicText and the chat is released.
func (s *Service) executeSafely(ctx context.Context, run *Run, lease *runhub.Lease, prov agent.Provider, chat Chat, req agent.RunRequest, transcript string) {
	defer func() {
		if p := recover(); p != nil {
			s.logPanic(ctx, run, p)
			s.abandon(context.WithoutCancel(ctx), run, lease)
		}
	}()
	s.execute(ctx, run, lease, prov, chat, req, transcript)
}

func (s *Service) logPanic(ctx context.Context, run *Run, p any) {
	s.log.ErrorContext(ctx, "panic in a run", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, logkey.Agent, run.Agent,
		"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
}

// abandon ends a run whose goroutine panicked, doing each step of execute's
// end that may not have happened; each step survives a panic of its own.
func (s *Service) abandon(ctx context.Context, run *Run, lease *runhub.Lease) {
	select {
	case <-run.done:
		return // the panic came after the run had ended
	default:
	}
	step := func(name string, f func()) {
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(ctx, "panic while ending a run", "step", name, logkey.ChatID, run.ChatID, logkey.RunID, run.ID,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			}
		}()
		f()
	}
	step("event", func() { s.appendEvent(ctx, run, agent.Event{Type: agent.EventRunFailed, Text: PanicText}) })
	step("release", func() {
		if err := lease.Release(ctx, runhub.StatusFailed, nil, PanicText); err != nil {
			s.log.WarnContext(ctx, "release run after a panic", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "err", err)
		}
	})
	step("relay", func() { s.removeRelay(ctx, run) })
	step("observer", func() { s.opts.Observer.RunEnded(run.Agent, string(runhub.StatusFailed), 0) })
	s.mu.Lock()
	if s.active[run.ChatID] == run {
		delete(s.active, run.ChatID)
	}
	s.mu.Unlock()
	run.mu.Lock()
	run.status = runhub.StatusFailed
	run.err = errors.New(PanicText)
	run.mu.Unlock()
	if run.cancel != nil {
		run.cancel()
	}
	run.endingOnce.Do(func() { close(run.ending) })
	close(run.done)
}
