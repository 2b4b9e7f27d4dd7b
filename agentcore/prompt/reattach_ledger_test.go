package prompt

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// storeLedger is the ledger over the real store, as chatops/chatstore wires it.
type storeLedger struct{ st *store.Store }

func (l storeLedger) RecordInteraction(ctx context.Context, in InteractionRecord) error {
	return l.st.CreateInteraction(ctx, store.Interaction{RunID: string(in.RunID), ID: string(in.ID), ChatID: string(in.ChatID), NativeID: in.NativeID, Kind: in.Kind, Payload: in.Payload})
}

func (l storeLedger) ResolveInteraction(ctx context.Context, runID agent.RunID, id agent.InteractionID, status, decision, by string) error {
	return l.st.ResolveInteraction(ctx, runID, id, status, decision, by)
}

func (l storeLedger) RunInteractions(ctx context.Context, chatID agent.ChatID, runID agent.RunID) ([]LedgerEntry, error) {
	ins, err := l.st.ListInteractions(ctx, string(chatID))
	var out []LedgerEntry
	for _, in := range ins {
		if in.RunID == string(runID) {
			out = append(out, LedgerEntry{ID: in.ID, Status: in.Status, Decision: in.Decision, By: in.ResolvedBy})
		}
	}
	return out, err
}

type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestReattachLedgerAheadOfEvents: the ledger records a request and its
// outcome before the run's events of them are committed, so a bot killed in
// between leaves them in the ledger only. The reattached run answers the
// decision found only there again (the agent has not seen it) and records
// neither the request nor the outcome a second time: the ledger kept them
// (before, "record interaction ... UNIQUE constraint failed" and "resolve
// interaction ...: already approved" on reattach, and the card open again).
func TestReattachLedgerAheadOfEvents(t *testing.T) {
	for _, dialect := range storetest.Dialects {
		t.Run(dialect, func(t *testing.T) {
			var logs lockedBuf
			q1 := &agent.Interaction{ID: "q1", Kind: agent.KindCommandApproval, Title: "Bash: ls"}
			// Persisted: the prompt and q1's request; q1's approval and q2's
			// request were in the ledger only when the bot died.
			st, s, run := reattachedRun(t, dialect, slog.New(slog.NewTextHandler(&logs, nil)), q1, func(led storeLedger) {
				for _, id := range []agent.InteractionID{"q1", "q2"} {
					if err := led.RecordInteraction(t.Context(), InteractionRecord{RunID: "r1", ID: id, ChatID: "c1", NativeID: []byte(`"` + id + `"`), Kind: string(agent.KindCommandApproval)}); err != nil {
						t.Fatal(err)
					}
				}
				if err := led.ResolveInteraction(t.Context(), "r1", "q1", agent.StatusApproved, string(agent.DecisionApprove), "alice"); err != nil {
					t.Fatal(err)
				}
			})
			ctx := t.Context()
			a := &attempt{}
			// The provider re-emits q1's request (persisted: dropped) and
			// is answered with the ledger's decision, then emits what the
			// events lack: q1's resolution and q2's request.
			if !s.replayed(ctx, run, agent.Event{Type: agent.EventInteractionRequested, Interaction: q1}, a) {
				t.Fatal("q1's persisted request not matched")
			}
			select {
			case resp := <-run.responses:
				if resp.InteractionID != "q1" || resp.Decision != agent.DecisionApprove || resp.By != "alice" {
					t.Fatalf("q1 answered again with %+v", resp)
				}
			default:
				t.Fatal("q1's decision, in the ledger only, was not answered again: the card would be open again")
			}
			s.resolved(ctx, run, &agent.Resolution{InteractionID: "q1", Status: agent.StatusApproved, Decision: agent.DecisionApprove, By: "alice"})
			s.requested(ctx, run, &agent.Interaction{ID: "q2", Kind: agent.KindCommandApproval, Title: "Bash: pwd"})
			if l := logs.String(); strings.Contains(l, "record interaction") || strings.Contains(l, "resolve interaction") {
				t.Fatalf("the ledger was written again:\n%s", l)
			}
			ins, err := st.ListInteractions(ctx, "c1")
			if err != nil || len(ins) != 2 || ins[0].Status != store.InteractionApproved || ins[0].ResolvedBy != "alice" || ins[1].Status != store.InteractionPending {
				t.Fatalf("ledger %+v %v", ins, err)
			}
		})
	}
}

// reattachedRun is the run r1 of chat c1 as Reattach rebuilds it after the
// bot died: in the dialect's store the chat's log holds the prompt and q's
// request, ledger (called with the store's ledger) writes what the ledger
// held besides, and the returned Run carries the replay loaded from both.
func reattachedRun(t *testing.T, dialect string, log *slog.Logger, q *agent.Interaction, ledger func(storeLedger)) (*store.Store, *Service, *Run) {
	t.Helper()
	st := storetest.Open(t, dialect)
	ctx := t.Context()
	if err := st.CreateChat(ctx, &store.Chat{ID: "c1", Agent: "claude"}); err != nil {
		t.Fatal(err)
	}
	if err := st.StartRun(ctx, store.RunRecord{ID: "r1", ChatID: "c1"}); err != nil {
		t.Fatal(err)
	}
	enc := func(v any) json.RawMessage { b, _ := json.Marshal(v); return b }
	if err := st.AppendEvents(ctx, []runhub.Event{
		{ChatID: "c1", Seq: 1, RunID: "r1", Type: chatlog.TypeUserMessage, Payload: enc(chatlog.UserMessage{Text: "go"})},
		{ChatID: "c1", Seq: 2, RunID: "r1", Type: string(agent.EventInteractionRequested), Payload: enc(agent.Event{Type: agent.EventInteractionRequested, Interaction: q})},
	}); err != nil {
		t.Fatal(err)
	}
	led := storeLedger{st}
	ledger(led)
	s := &Service{history: st, ledger: led, log: log, opts: Options{Observer: nopObserver{}}}
	rp, err := s.loadReplay(ctx, "c1", "r1")
	if err != nil {
		t.Fatal(err)
	}
	run := &Run{ID: "r1", ChatID: "c1", responses: make(chan agent.InteractionResponse, 8), ending: make(chan struct{}),
		interactions: map[string]*interactionState{}, resolved: map[string]bool{}, replay: rp}
	return st, s, run
}
