// Which decisions answer an interaction: the check that keeps a free-text
// answer from approving a tool.

package agent

// Accepts reports whether decision d answers the interaction. Every request
// may be declined or cancelled. Where the request lists options with their
// decisions, d must be of the same family as one of them (answer, or an
// approval: approve and approve for the session stand for each other, the
// provider narrows a session approval it cannot grant); otherwise questions
// and elicitations take answers, and every other kind (approvals) takes an
// approval. An empty or unknown decision answers nothing.
func (in *Interaction) Accepts(d Decision) bool {
	switch d {
	case DecisionDecline, DecisionCancel:
		return true
	case DecisionAnswer, DecisionApprove, DecisionApproveSession:
	default:
		return false
	}
	declared := false
	for _, o := range in.Options {
		if o.Kind == "" {
			continue
		}
		declared = true
		if approval(o.Kind) == approval(d) && (o.Kind == DecisionAnswer) == (d == DecisionAnswer) {
			return true
		}
	}
	if declared {
		return false
	}
	asks := in.Kind == KindQuestion || in.Kind == KindElicitation
	return (d == DecisionAnswer) == asks
}

// approval reports the approval family: approve and approve for the session.
func approval(d Decision) bool { return d == DecisionApprove || d == DecisionApproveSession }
