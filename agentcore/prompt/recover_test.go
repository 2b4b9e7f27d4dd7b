// Tests of panics in a run's goroutine (recover.go).

package prompt_test

import (
	"bytes"
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
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// syncBuffer is a log sink safe for the run goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// panickyScrubber is a redactor that panics when it meets the text "boom"
// held back at a run's end, a panic outside the provider's Run.
type panickyScrubber struct{ *redact.Redactor }

func (p panickyScrubber) Cut(s string) string {
	if s == "zzzz-sec" {
		panic("scrubber bug")
	}
	return p.Redactor.Cut(s)
}

// TestPanickingRun: a provider that panics in Run, and a panic after it
// (while the run's held text is flushed), each end the run as failed with
// PanicText in the chat, log the panic with its stack, and release the chat:
// the next prompt runs.
func TestPanickingRun(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		var logs syncBuffer
		log := slog.New(slog.NewJSONHandler(&logs, nil))
		hub := runhub.New(st, log, runhub.Options{Owner: "test"})
		t.Cleanup(func() { hub.Close() })
		prov := &scripted{}
		svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{
			Owner: "test", Ledger: ledger{st}, Scrubber: panickyScrubber{redact.New("zzzz-secret-token")},
		})
		c := store.Chat{ID: fmt.Sprintf("chat-%d", time.Now().UnixNano()), Agent: "fake", Mode: "default", Cwd: t.TempDir()}
		if err := st.CreateChat(t.Context(), &c); err != nil {
			t.Fatal(err)
		}
		f := &fixture{st: st, hub: hub, svc: svc, prov: prov, chat: agent.ChatID(c.ID)}
		prov.turns = append(prov.turns,
			func(_ context.Context, req agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "working"})
				var parts []string
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: parts[len(req.Prompt)]}) // a real bug: index out of range
				return nil
			},
			func(_ context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
				emit(agent.Event{Type: agent.EventAssistantDelta, Text: "almost zzzz-sec"})
				return nil // the held "zzzz-sec" panics the scrubber at the flush
			},
			answer("s2", "fine again"),
		)
		for i, where := range []string{"provider", "flush"} {
			r := f.run(t, "go "+where)
			if r.Status() != runhub.StatusFailed || r.Err() == nil || !strings.Contains(r.Err().Error(), prompt.PanicText) {
				t.Fatalf("%s: status %s, err %v", where, r.Status(), r.Err())
			}
			if _, active := svc.Active(f.chat); active {
				t.Fatalf("%s: the chat is still busy", where)
			}
			run, err := st.GetRun(t.Context(), string(r.ID))
			if err != nil || run.Status != runhub.StatusFailed || !strings.Contains(run.Error, prompt.PanicText) {
				t.Fatalf("%s: stored run %+v, %v", where, run, err)
			}
			evs, err := st.EventsAfter(t.Context(), f.chat, 0, 1000)
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for _, e := range evs {
				if e.RunID != r.ID || e.Type != string(agent.EventRunFailed) {
					continue
				}
				var ev agent.Event
				_ = json.Unmarshal(e.Payload, &ev)
				if !strings.Contains(ev.Text, prompt.PanicText) {
					t.Errorf("%s: run.failed text %q", where, ev.Text)
				}
				failed++
			}
			if failed != 1 {
				t.Errorf("%s: %d run.failed events, want 1", where, failed)
			}
			var rec struct {
				Msg, Panic, Stack string
				Run               string `json:"run_id"`
			}
			found := false
			for _, line := range strings.Split(logs.String(), "\n") {
				if json.Unmarshal([]byte(line), &rec) == nil && rec.Run == string(r.ID) && rec.Stack != "" {
					found = true
					if !strings.Contains(rec.Stack, "recover_test.go") && i == 0 || !strings.Contains(rec.Stack, "goroutine") {
						t.Errorf("%s: the logged stack does not show the panic's origin:\n%s", where, rec.Stack)
					}
				}
			}
			if !found {
				t.Errorf("%s: no log record with the stack:\n%s", where, logs.String())
			}
		}
		if r := f.run(t, "again"); r.Status() != runhub.StatusCompleted {
			t.Fatalf("the chat is wedged after the panics: %s %v", r.Status(), r.Err())
		}
	})
}
