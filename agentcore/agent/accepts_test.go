// Tests of Interaction.Accepts.

package agent

import "testing"

func TestInteractionAccepts(t *testing.T) {
	t.Parallel()
	approval := &Interaction{Kind: KindCommandApproval}
	question := &Interaction{Kind: KindQuestion}
	withOptions := &Interaction{Kind: KindElicitation, Options: []Option{{ID: "approve", Kind: DecisionApprove}, {ID: "decline", Kind: DecisionDecline}}}
	generic := &Interaction{Kind: KindUnknown, Options: []Option{{ID: "answer", Kind: DecisionAnswer}, {ID: "decline", Kind: DecisionDecline}}}
	for _, c := range []struct {
		in   *Interaction
		d    Decision
		want bool
	}{
		{approval, DecisionApprove, true}, {approval, DecisionApproveSession, true}, {approval, DecisionAnswer, false},
		{approval, DecisionDecline, true}, {approval, DecisionCancel, true}, {approval, "", false}, {approval, "yes", false},
		{question, DecisionAnswer, true}, {question, DecisionApprove, false}, {question, DecisionDecline, true},
		{withOptions, DecisionApprove, true}, {withOptions, DecisionAnswer, false}, {withOptions, DecisionApproveSession, true},
		{generic, DecisionAnswer, true}, {generic, DecisionApprove, false}, {generic, DecisionCancel, true},
		{&Interaction{Kind: KindToolCall}, DecisionAnswer, false},
	} {
		if got := c.in.Accepts(c.d); got != c.want {
			t.Errorf("%s (options %v).Accepts(%q) = %v, want %v", c.in.Kind, c.in.Options, c.d, got, c.want)
		}
	}
}
