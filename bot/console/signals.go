// Ctrl-C in a terminal front-end: SIGINT is a press (stop the turn), SIGTERM
// ends the session.

package console

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interrupts turns SIGINT into a channel of presses (a press stops the running
// turn; the front-end decides what a press while idle does). SIGTERM cancels
// the returned context. stop releases the signals.
func Interrupts(ctx context.Context) (presses <-chan struct{}, _ context.Context, stop func()) {
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancel(ctx)
	out := make(chan struct{}, 4)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case s := <-sig:
				if s == syscall.SIGTERM {
					cancel()
					return
				}
				select {
				case out <- struct{}{}:
				default:
				}
			}
		}
	}()
	return out, ctx, func() { signal.Stop(sig); cancel() }
}
