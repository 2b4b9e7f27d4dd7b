package claude

import (
	"fmt"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

func canUse(id, command, rule string) string {
	return fmt.Sprintf(`{"type":"control_request","request_id":%q,"request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":%q},`+
		`"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":%q}],"behavior":"allow","destination":"localSettings"},`+
		`{"type":"setMode","mode":"acceptEdits","destination":"session"}],"tool_use_id":"tu-%s"}}`, id, command, rule, id)
}

// TestGrantsCarryToTheNextTurn: a rule approved for the session answers the
// same suggestion in a later turn's parser at once (By "session"), with
// the grant sent again; another rule is still asked.
func TestGrantsCarryToTheNextTurn(t *testing.T) {
	var store grantStore
	p := NewParser("")
	p.Grants = store.get("")
	providertest.MustParse(t, p, `{"type":"system","subtype":"init","session_id":"s1","model":"m"}`)
	providertest.MustParse(t, p, canUse("r1", "mkdir -p out", "mkdir -p out"))
	if _, err := p.Respond(agent.InteractionResponse{InteractionID: "r1", Decision: agent.DecisionApproveSession}); err != nil {
		t.Fatal(err)
	}
	out := p.TakeOutgoing()
	if len(out) != 1 || strings.Contains(string(out[0]), "setMode") || !strings.Contains(string(out[0]), `"destination":"session"`) {
		t.Fatalf("sent %s (setMode must be dropped)", out)
	}
	store.put(p.SessionID(), p.Grants)

	next := NewParser("s1")
	next.Grants = store.get("s1")
	evs := providertest.MustParse(t, next, canUse("r2", "mkdir -p out", "mkdir -p out"))
	if len(evs) != 2 || evs[1].Resolution.Status != agent.StatusApprovedForSession || evs[1].Resolution.By != ByGrant {
		t.Fatalf("granted request: %+v", evs)
	}
	if out := next.TakeOutgoing(); len(out) != 1 || !strings.Contains(string(out[0]), `"updatedPermissions":[{"behavior":"allow","destination":"session","rules":[{"toolName":"Bash","ruleContent":"mkdir -p out"}]`) {
		t.Errorf("sent %s", out)
	}
	if evs := providertest.MustParse(t, next, canUse("r3", "rm -rf out", "rm -rf out")); len(evs) != 1 || evs[0].Type != agent.EventInteractionRequested {
		t.Errorf("another rule was not asked: %+v", evs)
	}
	if g := store.get("other"); len(g) != 0 {
		t.Errorf("grants leaked to another session: %v", g)
	}
}

func TestGrantStoreBounded(t *testing.T) {
	var s grantStore
	for i := range maxGrantSessions + 5 {
		s.put(fmt.Sprint("s", i), Grants{"Bash(x)": true})
	}
	if len(s.by) != maxGrantSessions || len(s.get("s0")) != 0 || len(s.get(fmt.Sprint("s", maxGrantSessions+4))) != 1 {
		t.Errorf("%d sessions kept", len(s.by))
	}
	s.put("", Grants{"Bash(x)": true})
	if len(s.get("")) != 0 {
		t.Error("grants kept for no session")
	}
}
