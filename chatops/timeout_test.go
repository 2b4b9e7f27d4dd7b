package chatops_test

import (
	"context"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestChannelInteractionTimeout: a channel that declines unanswered approvals
// after a while gets them declined as timed_out, not waiting forever.
func TestChannelInteractionTimeout(t *testing.T) {
	st := storetest.Open(t, store.DialectSQLite)
	f := setup(t, st, chatops.DeskOptions{})
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

func TestChannelRulesMergeSkillsAndTimeout(t *testing.T) {
	p := &chatops.Policy{}
	p.Set(chatops.Scope{Platform: "slack"}, chatops.Rules{Defaults: chatops.Defaults{
		InteractionTimeout: time.Minute, Skills: []registry.Skill{{Name: "review", Path: "/s/review/SKILL.md"}}}})
	p.Set(chatops.Scope{Platform: "slack", Channel: "C1"}, chatops.Rules{Defaults: chatops.Defaults{
		InteractionTimeout: 5 * time.Minute, Skills: []registry.Skill{{Name: "deploy", Path: "/s/deploy/SKILL.md"}}}})
	r := p.Channel(chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"})
	if r.InteractionTimeout != 5*time.Minute {
		t.Errorf("timeout %s: the channel's should win", r.InteractionTimeout)
	}
	if len(r.Skills) != 2 || r.Skills[0].Name != "review" || r.Skills[1].Name != "deploy" {
		t.Errorf("skills %+v: the workspace's then the channel's", r.Skills)
	}
	if other := p.Channel(chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C2"}); len(other.Skills) != 1 || other.InteractionTimeout != time.Minute {
		t.Errorf("another channel: %+v", other)
	}
}
