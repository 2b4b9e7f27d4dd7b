// decisions.go: approval decisions typed in a thread ("approve", "deny",
// "approve for session"), for platforms whose cards are answered by reply.

package chatops

import (
	"context"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// decisionWords are the typed replies that decide an approval. Only explicit
// words: "ok", "yes", "y", "allow" and the like are not decisions (they go to
// the agent as a prompt), so nothing is approved by a casual reply.
var decisionWords = map[string]agent.Decision{
	"approve":                 agent.DecisionApprove,
	"approve for session":     agent.DecisionApproveSession,
	"approve for the session": agent.DecisionApproveSession,
	"approve session":         agent.DecisionApproveSession,
	"deny":                    agent.DecisionDecline,
	"decline":                 agent.DecisionDecline,
}

// typedDecision parses text as a typed decision; ok is false for anything else.
func typedDecision(text string) (agent.Decision, bool) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	d, ok := decisionWords[strings.Join(strings.Fields(t), " ")]
	return d, ok
}

// approvalWaiting returns the one approval the chat's active run waits for
// (as this process follows it); ok is false when there is none or more than
// one (the user then presses the card's button).
func (t *Threads) approvalWaiting(chatID string) (Ref, bool) {
	r, active := t.bot.Active(chatID)
	if !active {
		return Ref{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var (
		found Ref
		n     int
	)
	prefix := r.ID + "|"
	for k, in := range t.pending {
		if !strings.HasPrefix(k, prefix) || !in.Accepts(agent.DecisionApprove) {
			continue
		}
		found, n = Ref{ChatID: chatID, RunID: r.ID, InteractionID: in.ID}, n+1
	}
	return found, n == 1
}

// handleTypedDecision answers the approval the chat waits for with a typed
// decision; handled is false when nothing waits (the text is then a prompt).
func (t *Threads) handleTypedDecision(ctx context.Context, m Message, b Binding, d agent.Decision) (handled bool, err error) {
	ref, ok := t.approvalWaiting(b.ChatID)
	if !ok {
		return false, nil
	}
	if ok, why := t.mayAnswerRun(ctx, m.User, m.Place, ref.RunID); !ok {
		return true, t.refuse(ctx, m.Place, m.User, why)
	}
	ref.Decision = d
	return true, t.respond(ctx, m.Place, m.User, ref, agent.InteractionResponse{InteractionID: ref.InteractionID, Decision: d, By: m.User.Qualified()})
}
