package prompt_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// replica is one bot process: its own hub, prompt service and router over
// the shared store.
type replica struct {
	hub  *runhub.Hub
	svc  *prompt.Service
	prov *scripted
}

func newReplica(t *testing.T, st *store.Store, owner string, timeout time.Duration) *replica {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	hub := runhub.New(st, log, runhub.Options{Owner: owner})
	t.Cleanup(func() { hub.Close() })
	rt, err := st.NewRouter(t.Context(), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	prov := &scripted{}
	svc := prompt.New(hub, chats{st}, st, []agent.Provider{prov}, log, prompt.Options{
		Owner: owner, Ledger: ledger{st}, Router: rt, RouteTimeout: timeout,
	})
	if err := svc.Listen(t.Context()); err != nil {
		t.Fatal(err)
	}
	return &replica{hub: hub, svc: svc, prov: prov}
}

// approveThenAsk asks for an approval, then a question with a secret field,
// reporting each answer on got, and runs until cancelled.
func approveThenAsk(got chan<- agent.InteractionResponse) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		ask := func(in *agent.Interaction) bool {
			emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: in})
			select {
			case resp := <-req.Responses:
				got <- resp
				emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{
					InteractionID: resp.InteractionID, Status: agent.StatusApproved, Decision: resp.Decision, By: resp.By,
				}})
				return true
			case <-ctx.Done():
				return false
			}
		}
		if !ask(&agent.Interaction{ID: "q1", NativeID: []byte(`7`), Kind: agent.KindCommandApproval, Title: "Bash: make"}) {
			return nil
		}
		if !ask(&agent.Interaction{ID: "q2", NativeID: []byte(`8`), Kind: agent.KindQuestion,
			Questions: []agent.Question{{ID: "pw", Text: "Password?", Secret: true}}}) {
			return nil
		}
		<-ctx.Done()
		return nil
	}
}

func waitInteraction(t *testing.T, st *store.Store, runID agent.RunID, id agent.InteractionID) {
	t.Helper()
	// Polled: the ledger has no notification. The bound only ends a test
	// whose run never asks; a loaded machine gets a minute.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if in, err := st.GetInteraction(t.Context(), runID, id); err == nil && in.Status == store.InteractionPending {
			return
		}
	}
	t.Fatalf("interaction %s never recorded", id)
}

// startAsking creates the chat chatID and starts on a an interactive run of
// turn, returning once the run's first interaction is pending in the ledger.
func (a *replica) startAsking(t *testing.T, st *store.Store, chatID, text string, turn func(context.Context, agent.RunRequest, func(agent.Event)) error) *prompt.Run {
	t.Helper()
	chat := store.Chat{ID: chatID, Agent: "fake", Mode: "default", Cwd: t.TempDir()}
	if err := st.CreateChat(t.Context(), &chat); err != nil {
		t.Fatal(err)
	}
	a.prov.turns = append(a.prov.turns, turn)
	r, err := a.svc.Start(t.Context(), prompt.StartRequest{ChatID: agent.ChatID(chatID), Prompt: text, Interactive: true})
	if err != nil {
		t.Fatal(err)
	}
	waitInteraction(t, st, r.ID, "q1")
	return r
}

// TestRoutedBetweenReplicas: two replicas over one Postgres schema; the run
// lives on A, every answer and the cancel arrive on B.
func TestRoutedBetweenReplicas(t *testing.T) {
	st := storetest.Open(t, store.DialectPostgres)
	ctx := t.Context()
	a := newReplica(t, st, "replica-a", 5*time.Second)
	b := newReplica(t, st, "replica-b", 5*time.Second)
	chat := store.Chat{ID: "chat-routed"}
	got := make(chan agent.InteractionResponse, 4)
	r := a.startAsking(t, st, chat.ID, "build", approveThenAsk(got))

	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{InteractionID: "nope", Decision: agent.DecisionApprove}); !errors.Is(err, prompt.ErrUnknownInteraction) {
		t.Errorf("unknown id through B: %v", err)
	}
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), "another-run", agent.InteractionResponse{InteractionID: "q1"}); !errors.Is(err, prompt.ErrRunNotActive) {
		t.Errorf("wrong run through B: %v", err)
	}
	start := time.Now()
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionApprove, By: "bob"}); err != nil {
		t.Fatalf("answer through B: %v", err)
	}
	t.Logf("routed answer acknowledged in %s", time.Since(start))
	select {
	case resp := <-got:
		if resp.InteractionID != "q1" || resp.Decision != agent.DecisionApprove || resp.By != "bob" {
			t.Errorf("A's run got %+v", resp)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the answer never reached A's run")
	}
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionDecline, By: "carol"}); !errors.Is(err, prompt.ErrInteractionResolved) {
		t.Errorf("second answer through B: %v", err)
	}

	// A secret answer is refused on B, reaches nobody, and the request stays
	// answerable on A.
	waitInteraction(t, st, r.ID, "q2")
	const secret = "hunter2-routed-secret"
	err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{
		InteractionID: "q2", Decision: agent.DecisionAnswer, Answers: map[string]string{"pw": secret}, Secret: true, By: "bob",
	})
	if !errors.Is(err, prompt.ErrSecretNotRouted) || !strings.Contains(err.Error(), "answer again") || strings.Contains(err.Error(), secret) {
		t.Errorf("secret through B: %v", err)
	}
	select {
	case resp := <-got:
		t.Fatalf("a refused secret answer reached the run: %+v", resp)
	case <-time.After(100 * time.Millisecond):
	}
	if in, _ := st.GetInteraction(ctx, r.ID, "q2"); in.Status != store.InteractionPending {
		t.Errorf("q2 after the refused answer: %+v", in)
	}
	if err := a.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{
		InteractionID: "q2", Decision: agent.DecisionAnswer, Answers: map[string]string{"pw": secret}, Secret: true, By: "bob",
	}); err != nil {
		t.Fatalf("secret on A: %v", err)
	}
	if resp := <-got; resp.Answers["pw"] != secret {
		t.Errorf("A's run got %+v", resp)
	}

	// Cancel through B interrupts A's run.
	if err := b.svc.Stop(ctx, agent.ChatID(chat.ID)); err != nil {
		t.Fatalf("stop through B: %v", err)
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("A's run did not end after the routed cancel")
	}
	if r.Status() != runhub.StatusInterrupted {
		t.Errorf("status %q", r.Status())
	}
	if run, _ := st.GetRun(ctx, string(r.ID)); run.Status != runhub.StatusInterrupted {
		t.Errorf("stored run %+v", run)
	}
	evs, _ := st.EventsAfter(ctx, agent.ChatID(chat.ID), 0, 1000)
	interrupted := 0
	for _, ev := range evs {
		if ev.Type == string(agent.EventRunInterrupted) {
			interrupted++
		}
		if strings.Contains(string(ev.Payload), secret) {
			t.Errorf("secret persisted in %s", ev.Type)
		}
	}
	if interrupted != 1 {
		t.Errorf("%d run.interrupted events", interrupted)
	}
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, agent.InteractionResponse{InteractionID: "q2"}); !errors.Is(err, prompt.ErrRunNotActive) {
		t.Errorf("answer after the run: %v", err)
	}
	if err := b.svc.Stop(ctx, agent.ChatID(chat.ID)); !errors.Is(err, prompt.ErrRunNotActive) {
		t.Errorf("stop after the run: %v", err)
	}
	if b.svc.Cancel(agent.ChatID(chat.ID)) {
		t.Error("Cancel reported a run")
	}
}

// TestRouteFailures: an owner that does not answer, a payload over the
// NOTIFY limit, non-secret answer values routed intact, Cancel(bool) routed.
func TestRouteFailures(t *testing.T) {
	st := storetest.Open(t, store.DialectPostgres)
	ctx := t.Context()
	a := newReplica(t, st, "replica-a", 5*time.Second)
	b := newReplica(t, st, "replica-b", 300*time.Millisecond)

	ghost := store.Chat{ID: "chat-ghost", Agent: "fake", Mode: "default"}
	if err := st.CreateChat(ctx, &ghost); err != nil {
		t.Fatal(err)
	}
	// A run of a replica that died without a trace: nobody listens for it.
	if err := st.StartRun(ctx, store.RunRecord{ID: "ghost-run", ChatID: agent.ChatID(ghost.ID), Owner: "replica-dead"}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := b.svc.RespondInteraction(ctx, agent.ChatID(ghost.ID), "ghost-run", agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionApprove})
	if !errors.Is(err, prompt.ErrRouteTimeout) {
		t.Errorf("answer to a dead owner: %v", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("timeout took %s", took)
	}
	if err := b.svc.Stop(ctx, agent.ChatID(ghost.ID)); !errors.Is(err, prompt.ErrRouteTimeout) {
		t.Errorf("stop on a dead owner: %v", err)
	}

	chat := store.Chat{ID: "chat-big"}
	got := make(chan agent.InteractionResponse, 4)
	r := a.startAsking(t, st, chat.ID, "x", approveThenAsk(got))
	big := agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionApprove, Answers: map[string]string{"a": strings.Repeat("x", 8000)}}
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, big); !errors.Is(err, prompt.ErrRouteTooLarge) {
		t.Errorf("9 kB answer: %v", err)
	}
	small := agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionApprove, OptionID: "opt-2", Answers: map[string]string{"name": "ünïcode \"quoted\""}, By: "bob"}
	if err := b.svc.RespondInteraction(ctx, agent.ChatID(chat.ID), r.ID, small); err != nil {
		t.Fatal(err)
	}
	if resp := <-got; resp.OptionID != "opt-2" || resp.Answers["name"] != small.Answers["name"] || resp.By != "bob" {
		t.Errorf("A's run got %+v", resp)
	}
	if !b.svc.Cancel(agent.ChatID(chat.ID)) {
		t.Error("Cancel through B reported no run")
	}
	select {
	case <-r.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("run did not end")
	}
}
