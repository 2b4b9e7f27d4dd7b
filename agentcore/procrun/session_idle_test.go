// Tests of the Session's idle watchdog and of over-long output lines, with the
// test binary re-executed as the scripted CLI.

package procrun

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestSessionIdleStops(t *testing.T) {
	const idle = 200 * time.Millisecond
	cases := []struct {
		name   string
		native bool
		env    []string
		killed bool
	}{
		{name: "native", native: true},
		{name: "signal"},
		{name: "deaf_then_kill", native: true, env: []string{"DEAF=1", "IGNORE_INT=1"}, killed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			grace := 30 * time.Second
			if tc.killed {
				grace = 300 * time.Millisecond
			}
			// The CLI prints one line and then nothing.
			env := append([]string{`START={"n":1}`}, tc.env...)
			r := runSession(t, t.Context(), &testWire{native: tc.native}, Session{IdleTimeout: idle, InterruptTimeout: grace}, nil, env...)
			if !errors.Is(r.err, agent.ErrRunFailed) || !errors.Is(r.err, ErrIdle) {
				t.Fatalf("err = %v\n%s", r.err, r.logs)
			}
			want := "fake wrote nothing for 200ms; stopped (idle_timeout)"
			if r.types() != "run.failed" || r.evs[0].Text != want {
				t.Fatalf("events = %+v, want one run.failed %q", r.evs, want)
			}
			if r.took < idle {
				t.Fatalf("stopped after %v, before the %v idle timeout", r.took, idle)
			}
			if tc.killed != strings.Contains(r.logs, "did not stop in time, killing") {
				t.Fatalf("kill logged = %v, want %v\n%s", !tc.killed, tc.killed, r.logs)
			}
		})
	}
}

// tickWire makes the CLI write a line every tick (it echoes what the wire
// writes) and completes the turn after ticks of them.
type tickWire struct {
	testWire
	every time.Duration
	ticks int
}

func (w *tickWire) Start(c *Conn) error {
	c.After("tick", w.every)
	return w.testWire.Start(c)
}

func (w *tickWire) Timer(name string, c *Conn) {
	if w.ticks == 0 {
		c.Emit(agent.Event{Type: agent.EventRunCompleted, Text: "ticked"})
		return
	}
	w.ticks--
	c.Write([]byte("tick"))
	c.After("tick", w.every)
}

func TestSessionIdleResetByOutput(t *testing.T) {
	// 40 lines 50 ms apart: the run lasts about 2 s, twice the idle timeout,
	// and is never idle for 1 s.
	const idle = time.Second
	r := runSession(t, t.Context(), &tickWire{every: 50 * time.Millisecond, ticks: 40}, Session{IdleTimeout: idle}, nil)
	if r.err != nil || r.types() != "run.completed" || r.evs[0].Text != "ticked" {
		t.Fatalf("err = %v, events = %+v\n%s", r.err, r.evs, r.logs)
	}
	if r.took <= idle {
		t.Fatalf("the run took %v, not longer than the idle timeout %v: the test proves nothing", r.took, idle)
	}
}

func TestSessionIdleFromContext(t *testing.T) {
	// The wire completes the turn after 600 ms of silence.
	const silent = `START={"timer":600}`
	t.Run("zero_disables", func(t *testing.T) {
		r := runSession(t, WithIdleTimeout(t.Context(), 0), &testWire{native: true}, Session{}, nil, silent)
		if r.err != nil || r.types() != "run.completed" {
			t.Fatalf("err = %v, events = %+v\n%s", r.err, r.evs, r.logs)
		}
	})
	t.Run("negative_session_disables", func(t *testing.T) {
		r := runSession(t, WithIdleTimeout(t.Context(), 50*time.Millisecond), &testWire{native: true}, Session{IdleTimeout: -1}, nil, silent)
		if r.err != nil || r.types() != "run.completed" {
			t.Fatalf("err = %v, events = %+v\n%s", r.err, r.evs, r.logs)
		}
	})
	t.Run("context_applies", func(t *testing.T) {
		r := runSession(t, WithIdleTimeout(t.Context(), 100*time.Millisecond), &testWire{native: true}, Session{}, nil, silent)
		if !errors.Is(r.err, ErrIdle) || r.types() != "run.failed" || !strings.Contains(r.evs[0].Text, "wrote nothing for 100ms") {
			t.Fatalf("err = %v, events = %+v\n%s", r.err, r.evs, r.logs)
		}
	})
}

func TestSessionIdlePausedWhileAsking(t *testing.T) {
	// The CLI asks and waits silently for 5 idle timeouts; the answer
	// completes the turn: waiting for a person is not idleness.
	const idle = 100 * time.Millisecond
	answers := make(chan agent.InteractionResponse, 1)
	r := runSession(t, t.Context(), &testWire{native: true}, Session{IdleTimeout: idle, Responses: answers}, func(ev agent.Event) {
		if ev.Type == agent.EventInteractionRequested {
			id := ev.Interaction.ID
			time.AfterFunc(5*idle, func() { answers <- agent.InteractionResponse{InteractionID: id, Decision: agent.DecisionAnswer} })
		}
	}, `START={"req":"a"}`)
	if r.err != nil || r.types() != "interaction.requested interaction.resolved(a:answered) run.completed" {
		t.Fatalf("err = %v, events = %s\n%s", r.err, r.types(), r.logs)
	}
}

func TestSessionLineTooLong(t *testing.T) {
	// The CLI prints {"n":1}, a 20 MiB line, then {"n":2,"type":"done"}.
	for _, relayed := range []bool{false, true} {
		name := "direct"
		ctx := t.Context()
		if relayed {
			name = "relayed"
			ctx = WithRelay(ctx, testRelay(t).Run("run-big"))
		}
		t.Run(name, func(t *testing.T) {
			logger, logs := testLogger(t)
			var evs []agent.Event
			err := Session{Provider: "fake", Spec: childSpec(t, "bigline"), Wire: &testWire{}, Logger: logger}.
				Run(ctx, func(ev agent.Event) { evs = append(evs, ev) })
			if !errors.Is(err, agent.ErrRunFailed) || !errors.Is(err, ErrLineTooLong) {
				t.Fatalf("err = %v\n%s", err, logs)
			}
			if len(evs) != 2 {
				t.Fatalf("events = %+v, want system error and run.failed", evs)
			}
			// 20 MiB of x, the JSON around it (8 bytes) and the newline.
			want := "an output line of 20971529 bytes was over the 16 MiB limit and was skipped"
			if evs[0].Type != agent.EventSystem || evs[0].Subtype != "error" || evs[0].Text != want {
				t.Fatalf("first event = %+v, want system/error %q", evs[0], want)
			}
			if evs[1].Type != agent.EventRunFailed || evs[1].Text != want {
				t.Fatalf("end = %+v, want run.failed %q", evs[1], want)
			}
		})
	}
}
