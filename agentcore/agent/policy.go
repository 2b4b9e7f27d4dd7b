// The approval policy's own answer: what a request for approval gets when
// the chat is not asked.

package agent

// PolicyDecision is the answer the run's approval policy gives every request
// for approval: approve under ApprovalAccept, "" (the chat is asked) when
// the run asks (ApprovalAsk or unset) and has a Responses channel, and
// decline otherwise (ApprovalDeny, or nobody to ask).
func (r RunRequest) PolicyDecision() Decision {
	switch {
	case r.Approval == ApprovalAccept:
		return DecisionApprove
	case r.Responses != nil && (r.Approval == ApprovalAsk || r.Approval == ""):
		return ""
	}
	return DecisionDecline
}
