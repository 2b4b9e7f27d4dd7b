// decisions.go: approval decisions typed in a thread ("approve", "deny",
// "approve for session", each optionally followed by a card's code), for
// platforms whose cards are answered by reply. A typed decision is tied to a
// card the person could have seen: it applies only to an approval whose card
// was requested before the message was sent, and where several are pending
// the card's code names one.

package chatops

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/render"
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

// typedChoice is a typed decision and the card code it names ("" for none).
type typedChoice struct {
	decision agent.Decision
	code     string
}

// typedDecision parses text as a typed decision, optionally ending in a
// card's code; ok is false for anything else.
func typedDecision(text string) (typedChoice, bool) {
	t := strings.ToLower(strings.Trim(strings.TrimSpace(text), ".!"))
	words := strings.Fields(t)
	if d, ok := decisionWords[strings.Join(words, " ")]; ok {
		return typedChoice{decision: d}, true
	}
	if n := len(words); n >= 2 && isCardCode(words[n-1]) {
		if d, ok := decisionWords[strings.Join(words[:n-1], " ")]; ok {
			return typedChoice{decision: d, code: words[n-1]}, true
		}
	}
	return typedChoice{}, false
}

func isCardCode(w string) bool {
	if len(w) != render.CardCodeLen {
		return false
	}
	for i := 0; i < len(w); i++ {
		if !('0' <= w[i] && w[i] <= '9' || 'a' <= w[i] && w[i] <= 'f') {
			return false
		}
	}
	return true
}

// waitingApproval is a pending approval of the chat's active run and when
// its request was made (zero when unknown).
type waitingApproval struct {
	ref  Ref
	code string
	at   time.Time
}

// approvalsWaiting returns the approvals the chat's active run waits for (as
// this process follows it), oldest first.
func (t *Desk) approvalsWaiting(th *thread, chatID agent.ChatID) []waitingApproval {
	r, active := t.bot.Active(chatID)
	if !active {
		return nil
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	var out []waitingApproval
	for k, in := range th.pending {
		if k.run != r.ID || !in.Accepts(agent.DecisionApprove) {
			continue
		}
		out = append(out, waitingApproval{
			ref:  Ref{ChatID: r.ChatID, RunID: k.run, InteractionID: k.id},
			code: render.CardCode(k.run, k.id),
			at:   th.cardAt[k],
		})
	}
	slices.SortFunc(out, func(a, b waitingApproval) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.code, b.code)
	})
	return out
}

// handleTypedDecision answers an approval the chat waits for with a typed
// decision; handled is false when no approval waits (the text is then a
// prompt). Without a code the decision applies to the one approval whose
// card was requested before the message was sent (m.Sent; a message whose
// time the platform did not give is refused); with a code, to the pending
// card showing it. Anything else is refused with the codes to choose from.
func (t *Desk) handleTypedDecision(ctx context.Context, th *thread, m Message, b Binding, c typedChoice) (handled bool, err error) {
	waiting := t.approvalsWaiting(th, b.ChatID)
	if len(waiting) == 0 {
		return false, nil
	}
	var picked []waitingApproval
	if c.code != "" {
		for _, w := range waiting {
			if w.code == c.code {
				picked = append(picked, w)
			}
		}
	} else if !m.Sent.IsZero() {
		for _, w := range waiting {
			if !w.at.IsZero() && w.at.Before(m.Sent) {
				picked = append(picked, w)
			}
		}
	}
	if len(picked) != 1 {
		return true, t.refuse(ctx, m.Place, m.User, decisionRefusal(c, m, waiting, len(picked)))
	}
	ref := picked[0].ref
	if ok, why := t.mayAnswerRun(ctx, m.User, m.Place, ref.RunID); !ok {
		return true, t.refuse(ctx, m.Place, m.User, why)
	}
	ref.Decision = c.decision
	return true, t.respond(ctx, m.Place, m.User, ref, agent.InteractionResponse{InteractionID: string(ref.InteractionID), Decision: c.decision, By: m.User.Qualified()})
}

// decisionRefusal says why a typed decision decided nothing and how to name
// a card.
func decisionRefusal(c typedChoice, m Message, waiting []waitingApproval, n int) string {
	codes := make([]string, len(waiting))
	for i, w := range waiting {
		codes[i] = "`" + w.code + "`"
	}
	how := fmt.Sprintf("press the card's button, or reply `approve <code>` / `deny <code>` with the code on the card (pending: %s).", strings.Join(codes, ", "))
	switch {
	case c.code != "" && n == 0:
		return fmt.Sprintf("No pending card has the code `%s`: %s", c.code, how)
	case c.code != "":
		return fmt.Sprintf("Several pending cards have the code `%s`: press the button on the one you mean.", c.code)
	case m.Sent.IsZero():
		return "I cannot tell which card your message answers: " + how
	case n == 0:
		return "The card waiting now was posted after your message, so your message did not answer it: " + how
	default:
		return "Several cards are waiting: " + how
	}
}
