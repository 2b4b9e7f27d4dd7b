// Test that an agent's idle timeout reaches the run loop: a real child that
// writes nothing is stopped and the chat records why.

package prompt_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// silentWire is a protocol with nothing to say: the child never writes.
type silentWire struct{}

func (silentWire) Start(*procrun.Conn) error                              { return nil }
func (silentWire) Line([]byte, *procrun.Conn) error                       { return nil }
func (silentWire) Respond(agent.InteractionResponse, *procrun.Conn) error { return nil }
func (silentWire) Interrupt(*procrun.Conn) error                          { return procrun.ErrNoNative }
func (silentWire) Outcome(procrun.Outcome, *procrun.Conn) error           { return nil }

func TestIdleTimeoutStopsASilentAgent(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st)
	f.svc = prompt.New(f.hub, chats{st}, st, []agent.Provider{f.prov}, slog.New(slog.DiscardHandler), prompt.Options{
		Owner:  "test",
		Agents: map[string]prompt.AgentConfig{"fake": {Provider: "fake", IdleTimeout: 300 * time.Millisecond}},
	})
	f.prov.turns = append(f.prov.turns, func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		// The provider does not copy req.IdleTimeout: the service's ctx carries it.
		return procrun.Session{Provider: "fake", Spec: procrun.Spec{Bin: "sleep", Args: []string{"60"}}, Wire: silentWire{}}.Run(ctx, emit)
	})
	start := time.Now()
	r := f.run(t, "think quietly")
	if took := time.Since(start); took > 9*time.Second {
		t.Fatalf("the silent agent ran for %v", took)
	}
	if got := f.prov.requests()[0].IdleTimeout; got != 300*time.Millisecond {
		t.Errorf("request idle timeout = %v", got)
	}
	if r.Status() != runhub.StatusFailed {
		t.Fatalf("status = %s", r.Status())
	}
	evs, err := st.EventsAfter(t.Context(), f.chat, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, ev := range evs {
		var e agent.Event
		if ev.RunID == r.ID && ev.Type == string(agent.EventRunFailed) && json.Unmarshal(ev.Payload, &e) == nil {
			text = e.Text
		}
	}
	if want := "fake wrote nothing for 300ms; stopped (idle_timeout)"; !strings.Contains(text, want) {
		t.Fatalf("run.failed text = %q, want %q", text, want)
	}
}
