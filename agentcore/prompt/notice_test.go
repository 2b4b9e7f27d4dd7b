package prompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// versions is the version the "fake" agent's CLI reports, and whether it is
// verified.
type versions struct {
	mu       sync.Mutex
	version  string
	verified bool
	calls    int
}

func (v *versions) CheckVersion(_ context.Context, agentID string) (string, string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	if agentID != "fake" || v.verified {
		return v.version, ""
	}
	return v.version, "verified with 1.0.0; found " + v.version
}

func (v *versions) set(version string, verified bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.version, v.verified = version, verified
}

// notices returns the texts of the chat's version notices.
func notices(t *testing.T, st *store.Store, chatID agent.ChatID) []string {
	t.Helper()
	evs, err := st.EventsAfter(t.Context(), chatID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, ev := range evs {
		var e agent.Event
		if ev.Type == string(agent.EventSystem) && json.Unmarshal(ev.Payload, &e) == nil && e.Subtype == prompt.SubtypeVersionNotice {
			out = append(out, e.Text)
		}
	}
	return out
}

// TestVersionNoticeAndReportedModel: a CLI outside its verified versions is
// told in the chat in one line at its first run there (not at the next, again
// for a new version, never for a verified one), and the model the agent
// reports is stored with each run.
func TestVersionNoticeAndReportedModel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		ctx := t.Context()
		log := slog.New(slog.DiscardHandler)
		hub := runhub.New(st, log, runhub.Options{Owner: "test"})
		t.Cleanup(func() { hub.Close() })
		prov := &scripted{}
		v := &versions{version: "1.2.0"}
		svc := prompt.New(hub, forkChats{st}, st, []agent.Provider{prov}, log, prompt.Options{Owner: "test", Versions: v})
		c := store.Chat{ID: fmt.Sprintf("vn-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
		if err := st.CreateChat(ctx, &c); err != nil {
			t.Fatal(err)
		}
		reporting := func(model string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
			return func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1", Model: model})
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "ok"})
				emit(agent.Event{Type: agent.EventRunCompleted})
				return nil
			}
		}
		prov.turns = append(prov.turns, reporting("fake-large-2"), reporting("fake-large-2"), reporting(""), reporting("fake-small-1"))
		r1 := runIn(t, svc, agent.ChatID(c.ID), "one")
		got := notices(t, st, agent.ChatID(c.ID))
		if len(got) != 1 || strings.Contains(got[0], "\n") || !strings.Contains(got[0], "fake 1.2.0") || !strings.Contains(got[0], "verified with 1.0.0") {
			t.Fatalf("notices after the first run: %q", got)
		}
		if run, _ := st.GetRun(ctx, string(r1.ID)); run.AgentModel != "fake-large-2" {
			t.Fatalf("run 1 agent model %q", run.AgentModel)
		}
		runIn(t, svc, agent.ChatID(c.ID), "two")
		if got := notices(t, st, agent.ChatID(c.ID)); len(got) != 1 {
			t.Fatalf("the notice was repeated: %q", got)
		}
		v.set("1.3.0", false)
		r3 := runIn(t, svc, agent.ChatID(c.ID), "three")
		if got := notices(t, st, agent.ChatID(c.ID)); len(got) != 2 || !strings.Contains(got[1], "1.3.0") {
			t.Fatalf("a new version was not told: %q", got)
		}
		if run, _ := st.GetRun(ctx, string(r3.ID)); run.AgentModel != "" {
			t.Fatalf("a run that reported no model has %q", run.AgentModel)
		}
		v.set("1.0.0", true)
		r4 := runIn(t, svc, agent.ChatID(c.ID), "four")
		if got := notices(t, st, agent.ChatID(c.ID)); len(got) != 2 {
			t.Fatalf("a verified version was told: %q", got)
		}
		if run, _ := st.GetRun(ctx, string(r4.ID)); run.AgentModel != "fake-small-1" {
			t.Fatalf("run 4 agent model %q", run.AgentModel)
		}
		if m, _ := st.LastAgentModel(ctx, c.ID); m != "fake-small-1" {
			t.Fatalf("last agent model %q", m)
		}
	})
}
