// Tests of the sign-in hint mapping.

package claude

import (
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestSignInHint(t *testing.T) {
	t.Parallel()
	got := signInHint("Not logged in · Please run /login")
	if !strings.HasPrefix(got, NotSignedInHint) || !strings.HasSuffix(got, "(claude: Not logged in · Please run /login)") {
		t.Errorf("signInHint = %q", got)
	}
	for _, keep := range []string{"API error 500", "", "You are not logged in to GitHub"} {
		if got := signInHint(keep); got != keep {
			t.Errorf("signInHint(%q) = %q, want it unchanged", keep, got)
		}
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "claude /login", "host.user"} {
		if !strings.Contains(NotSignedInHint, want) {
			t.Errorf("the hint does not mention %s", want)
		}
	}
}

// TestNotLoggedInResult: the CLI's recorded answer (2.1.328, no key and no
// login) is one run.failed, not an answer, whose text maps to the hint (the
// wire applies signInHint; TestE2ENotLoggedInBecomesHint runs the real CLI).
func TestNotLoggedInResult(t *testing.T) {
	t.Parallel()
	p := &Parser{}
	var evs []agent.Event
	for _, l := range []string{
		`{"type":"assistant","message":{"id":"e2","model":"<synthetic>","role":"assistant","type":"message","content":[{"type":"text","text":"Not logged in · Please run /login"}]},"session_id":"s1","error":"authentication_failed","is_api_error_message":true}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","terminal_reason":"api_error","session_id":"s1","num_turns":1,"duration_ms":261}`,
	} {
		out, err := p.Parse([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, out...)
	}
	var failed *agent.Event
	for i := range evs {
		if evs[i].Type == agent.EventAssistantDelta {
			t.Errorf("the error message was shown as an answer: %q", evs[i].Text)
		}
		if evs[i].Type == agent.EventRunFailed {
			failed = &evs[i]
		}
	}
	if failed == nil {
		t.Fatalf("no run.failed in %+v", evs)
	}
	if got := signInHint(failed.Text); !strings.HasPrefix(got, NotSignedInHint) {
		t.Errorf("run.failed %q does not map to the hint", failed.Text)
	}
}
