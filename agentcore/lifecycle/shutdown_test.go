package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestShutdownOrder: the steps run in their order, the detach gets the
// grace as its deadline, an error is logged and the stop goes on.
func TestShutdownOrder(t *testing.T) {
	var got []string
	var logs bytes.Buffer
	step := func(name string) func() { return func() { got = append(got, name) } }
	Shutdown{
		Log: slog.New(slog.NewTextHandler(&logs, nil)), Grace: time.Minute,
		StopIntake: step("intake"),
		Detach: func(ctx context.Context) (int, error) {
			if d, ok := ctx.Deadline(); !ok || time.Until(d) > time.Minute {
				t.Errorf("detach deadline %v %v", d, ok)
			}
			got = append(got, "detach")
			return 2, nil
		},
		CloseDesk:   func() error { got = append(got, "desk"); return errors.New("desk busy") },
		StopLive:    step("live"),
		FlushEvents: func() error { got = append(got, "flush"); return nil },
		CloseStore:  func() error { got = append(got, "store"); return nil },
	}.Run()
	if want := []string{"intake", "detach", "desk", "live", "flush", "store"}; !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
	for _, want := range []string{"shutdown 1/4", "runs=2", "shutdown: front desk", "desk busy", "shutdown 4/4", "shutdown complete"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
