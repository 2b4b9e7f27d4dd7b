package chatops_test

import (
	"context"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestChannelInteractionTimeout: a channel that declines unanswered approvals
// after a while gets them declined as timed_out, not waiting forever.
func TestChannelInteractionTimeout(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.ThreadsOptions{})
	f.policy.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{
		Defaults: chatops.Defaults{Agent: "fake", InteractionTimeout: 100 * time.Millisecond},
		Allow:    []string{"UALLOWED"}, Approvers: []string{"UAPPROVER"},
	})
	got := make(chan agent.InteractionResponse, 1)
	f.prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "q1", NativeID: []byte(`1`), Kind: agent.KindCommandApproval, Command: "make deploy"}})
		select {
		case resp := <-req.Responses:
			got <- resp
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: resp.InteractionID, Status: agent.StatusDeclined, Decision: resp.Decision, By: resp.By}})
		case <-ctx.Done():
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	if err := f.mention(t, "UALLOWED", "deploy"); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-got:
		if resp.Decision != agent.DecisionDecline || resp.By != "timeout" {
			t.Errorf("the agent got %+v", resp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the unanswered approval was never declined")
	}
}
