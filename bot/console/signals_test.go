package console_test

import (
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/console"
)

// TestInterrupts: SIGINT is a press and leaves the context alone; SIGTERM
// cancels it; stop releases the signals.
func TestInterrupts(t *testing.T) {
	presses, ctx, stop := console.Interrupts(t.Context())
	defer stop()
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-presses:
	case <-time.After(20 * time.Second):
		t.Fatal("SIGINT gave no press")
	}
	if ctx.Err() != nil {
		t.Fatal("SIGINT cancelled the context")
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
}
