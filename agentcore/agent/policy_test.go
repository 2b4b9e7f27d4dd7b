package agent

import "testing"

func TestPolicyDecision(t *testing.T) {
	ch := make(chan InteractionResponse)
	for _, tt := range []struct {
		req  RunRequest
		want Decision
	}{
		{RunRequest{Approval: ApprovalAccept}, DecisionApprove},
		{RunRequest{Approval: ApprovalAccept, Responses: ch}, DecisionApprove},
		{RunRequest{Approval: ApprovalAsk, Responses: ch}, ""},
		{RunRequest{Responses: ch}, ""},
		{RunRequest{Approval: ApprovalAsk}, DecisionDecline},
		{RunRequest{}, DecisionDecline},
		{RunRequest{Approval: ApprovalDeny, Responses: ch}, DecisionDecline},
		{RunRequest{Approval: "bogus", Responses: ch}, DecisionDecline},
	} {
		if got := tt.req.PolicyDecision(); got != tt.want {
			t.Errorf("approval %q, responses %v: %q, want %q", tt.req.Approval, tt.req.Responses != nil, got, tt.want)
		}
	}
}
