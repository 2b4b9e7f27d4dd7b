// Tests of typed decisions tied to a card (decisions.go).

package chatops_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// say sends a mention sent (by the platform's clock) at sent; zero is a
// platform that gave no time.
func (f *fixture) say(t *testing.T, who, text string, sent time.Time) error {
	t.Helper()
	return f.threads.HandleMessage(t.Context(), chatops.Message{Place: thread, ID: fmt.Sprintf("1690000002.%06d", time.Now().UnixNano()%1e6),
		Sent: sent, User: user(who), Text: text, Mentioned: true})
}

// asks returns a turn that requests the approvals in order, each after the
// previous one was answered (together, when together is set), and reports
// every response on got.
func asks(got chan<- agent.InteractionResponse, together bool, ids ...string) func(context.Context, agent.RunRequest, func(agent.Event)) error {
	return func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		request := func(id string) {
			emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
				ID: id, NativeID: []byte(`"` + id + `"`), Kind: agent.KindCommandApproval, Title: "Run a command", Command: "step " + id}})
		}
		if together {
			for _, id := range ids {
				request(id)
			}
		}
		for _, id := range ids {
			if !together {
				request(id)
			}
			var r agent.InteractionResponse
			select {
			case r = <-req.Responses:
			case <-ctx.Done():
				emit(agent.Event{Type: agent.EventRunInterrupted})
				return nil
			}
			got <- r
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: r.InteractionID, Status: "approved", Decision: r.Decision, By: r.By}})
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

var cardCode = regexp.MustCompile("Card `([0-9a-f]{4})`")

// codeOn waits for the pending card of the command and returns the code it shows.
func codeOn(t *testing.T, f *fixture, command string) string {
	t.Helper()
	var code string
	waitFor(t, "the card of "+command, func() bool {
		m := f.find(thread, func(m *message) bool { return strings.Contains(m.view.Body, command) && len(m.view.Buttons) > 0 })
		if m == nil {
			return false
		}
		if c := cardCode.FindStringSubmatch(m.view.Body); c != nil {
			code = c[1]
		}
		return code != ""
	})
	return code
}

// noResponse fails when the agent got a response.
func noResponse(t *testing.T, got <-chan agent.InteractionResponse, what string) {
	t.Helper()
	select {
	case r := <-got:
		t.Fatalf("%s answered an approval: %+v", what, r)
	case <-time.After(50 * time.Millisecond):
	}
}

func (f *fixture) lastEphemeral() string {
	f.surf.mu.Lock()
	defer f.surf.mu.Unlock()
	if len(f.surf.ephemerals) == 0 {
		return ""
	}
	return f.surf.ephemerals[len(f.surf.ephemerals)-1]
}

func TestTypedDecisionNamesACard(t *testing.T) {
	storetest.Each(t, func(t *testing.T, st *store.Store) {
		t.Run("an approve typed before a card appeared does not approve it", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 2)
			f.prov.Add(asks(got, false, "perm-a", "perm-b"))
			if err := f.say(t, "UAPPROVER", "deploy", time.Now()); err != nil {
				t.Fatal(err)
			}
			refA := approveRef(t, f, "step perm-a")
			codeOn(t, f, "step perm-a")
			// The approver types "approve" for card A; meanwhile A is
			// answered by a button and card B appears.
			typed := time.Now()
			if err := f.threads.HandleClick(t.Context(), chatops.Click{Place: thread, User: user("UAPPROVER2"), Button: chatops.ButtonApprove, Ref: refA}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "perm-a" {
				t.Fatalf("button answered %+v", r)
			}
			codeB := codeOn(t, f, "step perm-b")
			if want := render.CardCode(agent.RunID(refA.RunID), "perm-b"); codeB != want {
				t.Fatalf("card B shows code %s, want %s", codeB, want)
			}
			if err := f.say(t, "UAPPROVER", "approve", typed); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("a stale approve = %v, want a refusal", err)
			}
			noResponse(t, got, "an approve typed before card B was posted")
			if e := f.lastEphemeral(); !strings.Contains(e, "posted after your message") || !strings.Contains(e, codeB) {
				t.Errorf("refusal %q", e)
			}
			// Without the platform's time, a plain approve is refused too.
			if err := f.say(t, "UAPPROVER", "approve", time.Time{}); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("an approve without a time = %v, want a refusal", err)
			}
			noResponse(t, got, "an approve without a time")
			// A wrong code decides nothing; B's code approves B.
			other := "0000"
			if other == codeB {
				other = "0001"
			}
			if err := f.say(t, "UAPPROVER", "approve "+other, time.Now()); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("approve with a wrong code = %v", err)
			}
			noResponse(t, got, "a wrong code")
			if err := f.say(t, "UAPPROVER", "Approve for session "+codeB+".", time.Time{}); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "perm-b" || r.Decision != agent.DecisionApproveSession || r.By != "slack:UAPPROVER" {
				t.Fatalf("approve for session with B's code = %+v", r)
			}
		})

		t.Run("with several cards pending a plain approve asks for a code; a code decides its card", func(t *testing.T) {
			f := setupCatalog(t, st, chatops.DeskOptions{})
			got := make(chan agent.InteractionResponse, 2)
			f.prov.Add(asks(got, true, "perm-x", "perm-y"))
			if err := f.say(t, "UAPPROVER", "two steps", time.Now()); err != nil {
				t.Fatal(err)
			}
			codeX, codeY := codeOn(t, f, "step perm-x"), codeOn(t, f, "step perm-y")
			if err := f.say(t, "UAPPROVER", "approve", time.Now()); !errors.Is(err, chatops.ErrForbidden) {
				t.Fatalf("a plain approve with two cards = %v", err)
			}
			noResponse(t, got, "a plain approve with two cards")
			if e := f.lastEphemeral(); !strings.Contains(e, "Several cards") || !strings.Contains(e, codeX) || !strings.Contains(e, codeY) {
				t.Errorf("refusal %q", e)
			}
			if err := f.say(t, "UAPPROVER", "deny "+codeY, time.Now()); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "perm-y" || r.Decision != agent.DecisionDecline {
				t.Fatalf("deny %s = %+v", codeY, r)
			}
			// One card left, posted before: a plain approve takes it.
			waitFor(t, "card y resolved", func() bool {
				return f.find(thread, func(m *message) bool {
					return strings.Contains(m.view.Body, "step perm-y") && len(m.view.Buttons) == 0
				}) != nil
			})
			if err := f.say(t, "UAPPROVER", "approve", time.Now()); err != nil {
				t.Fatal(err)
			}
			if r := <-got; r.InteractionID != "perm-x" || r.Decision != agent.DecisionApprove {
				t.Fatalf("approve = %+v", r)
			}
		})
	})
}
