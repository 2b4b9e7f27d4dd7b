// Server requests the reference captures could not provoke, built from the
// pinned schema (codex-cli 0.169.0, schema/json*/): each is injected into a
// replayed turn, and what the harness answers is read back from its stdin.

package codexharness

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// injected runs text.jsonl with request line sent after turn/started,
// answering each interaction with decide (nil: nobody answers).
func injected(t *testing.T, line string, decide func(in *agent.Interaction) []agent.InteractionResponse) *fakeRun {
	t.Helper()
	var on func(agent.Event, context.CancelFunc, func(agent.InteractionResponse))
	if decide != nil {
		on = func(ev agent.Event, _ context.CancelFunc, answer func(agent.InteractionResponse)) {
			if ev.Type == agent.EventInteractionRequested {
				for _, r := range decide(ev.Interaction) {
					r.InteractionID = ev.Interaction.ID
					answer(r)
				}
			}
		}
	}
	f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x"}, fakeOpts{env: map[string]string{envInject: line}, onEvent: on})
	if f.Err != nil || f.Last().Type != agent.EventRunCompleted {
		t.Fatalf("err %v, last %+v", f.Err, f.Last())
	}
	return f
}

// answers returns the client's responses (lines without a method).
func (f *fakeRun) answers() []string {
	var out []string
	for _, l := range f.sent("") {
		out = append(out, strings.TrimSpace(string(l)))
	}
	return out
}

func (f *fakeRun) statuses() []string {
	var out []string
	for _, ev := range f.Of(agent.EventInteractionResolved) {
		out = append(out, ev.Resolution.Status+"/"+ev.Resolution.By)
	}
	return out
}

const (
	execCommandApproval = `{"method":"execCommandApproval","id":7,"params":{"conversationId":"t-1","callId":"call-1","approvalId":null,` +
		`"command":["/bin/bash","-lc","rm -rf build"],"cwd":"/work/p","reason":"clean the build","parsedCmd":[{"type":"unknown","cmd":"rm -rf build"}]}}`
	applyPatchApproval = `{"method":"applyPatchApproval","id":8,"params":{"conversationId":"t-1","callId":"call-2","grantRoot":null,"reason":null,` +
		`"fileChanges":{"b.txt":{"type":"update","unified_diff":"@@ -1 +1 @@\n-old\n+new\n","move_path":null},"a.txt":{"type":"add","content":"hello\n"}}}}`
)

func TestRunLegacyApprovals(t *testing.T) {
	for _, tt := range []struct {
		name, line string
		kind       agent.InteractionKind
		decision   agent.Decision
		want       string
		status     string
	}{
		{"exec approve", execCommandApproval, agent.KindCommandApproval, agent.DecisionApprove, `{"id":7,"result":{"decision":"approved"}}`, "approved/alice"},
		{"exec session", execCommandApproval, agent.KindCommandApproval, agent.DecisionApproveSession, `{"id":7,"result":{"decision":"approved_for_session"}}`, "approved_for_session/alice"},
		{"exec decline", execCommandApproval, agent.KindCommandApproval, agent.DecisionDecline, `{"id":7,"result":{"decision":{"denied":{"rejection":"declined by the user"}}}}`, "declined/alice"},
		{"exec cancel", execCommandApproval, agent.KindCommandApproval, agent.DecisionCancel, `{"id":7,"result":{"decision":"abort"}}`, "cancelled/alice"},
		{"patch approve", applyPatchApproval, agent.KindFileChangeApproval, agent.DecisionApprove, `{"id":8,"result":{"decision":"approved"}}`, "approved/alice"},
		{"patch decline", applyPatchApproval, agent.KindFileChangeApproval, agent.DecisionDecline, `{"id":8,"result":{"decision":{"denied":{"rejection":"declined by the user"}}}}`, "declined/alice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got *agent.Interaction
			f := injected(t, tt.line, func(in *agent.Interaction) []agent.InteractionResponse {
				got = in
				return []agent.InteractionResponse{{Decision: tt.decision, By: "alice"}}
			})
			if got == nil || got.Kind != tt.kind || !got.Accepts(tt.decision) {
				t.Fatalf("interaction %+v", got)
			}
			switch tt.kind {
			case agent.KindCommandApproval:
				if got.Command != "/bin/bash -lc rm -rf build" || got.Cwd != "/work/p" || got.Reason != "clean the build" || got.Title != "Test wants to run: rm -rf build" {
					t.Errorf("interaction %+v", got)
				}
			case agent.KindFileChangeApproval:
				if want := "+++ a.txt (new file)\n+hello\n--- b.txt\n+++ b.txt\n@@ -1 +1 @@\n-old\n+new\n"; got.Diff != want {
					t.Errorf("diff %q, want %q", got.Diff, want)
				}
			}
			if a := f.answers(); len(a) != 1 || a[0] != tt.want {
				t.Errorf("answer %q, want %s", a, tt.want)
			}
			if s := f.statuses(); len(s) != 1 || s[0] != tt.status {
				t.Errorf("resolutions %v", s)
			}
		})
	}
	t.Run("policy declines", func(t *testing.T) {
		f := runFake(t, "text.jsonl", agent.RunRequest{Prompt: "x", Approval: agent.ApprovalDeny}, fakeOpts{env: map[string]string{envInject: execCommandApproval}, noAnswer: true})
		want := `{"id":7,"result":{"decision":{"denied":{"rejection":"declined by Threadline's approval policy: nobody can be asked in this run"}}}}`
		if a := f.answers(); len(a) != 1 || a[0] != want {
			t.Errorf("answer %q", a)
		}
	})
}

// TestRunUnanswerableRequests: what Threadline cannot give (ChatGPT tokens,
// an attestation) is shown on a card saying why and declined at once with a
// JSON-RPC error; nobody is asked and nothing waits.
func TestRunUnanswerableRequests(t *testing.T) {
	for _, tt := range []struct {
		name, line, title, reason, want string
	}{
		{"chatgpt tokens", `{"method":"account/chatgptAuthTokens/refresh","id":3,"params":{"reason":"unauthorized","previousAccountId":null}}`,
			"Test's ChatGPT sign-in needs new tokens", "codex login",
			`{"id":3,"error":{"code":-32000,"message":"Threadline does not hold ChatGPT tokens for Test"}}`},
		{"attestation", `{"method":"attestation/generate","id":4,"params":{}}`,
			"Test asked for a client attestation", "no attestation token",
			`{"id":4,"error":{"code":-32000,"message":"Threadline cannot attest this client"}}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := injected(t, tt.line, nil) // nobody answers: the harness did
			req := f.Of(agent.EventInteractionRequested)
			if len(req) != 1 || req[0].Interaction.Title != tt.title || !strings.Contains(req[0].Interaction.Reason, tt.reason) || len(req[0].Interaction.Options) != 0 {
				t.Fatalf("card %+v", req)
			}
			if a := f.answers(); len(a) != 1 || a[0] != tt.want {
				t.Errorf("answer %q, want %s", a, tt.want)
			}
			if s := f.statuses(); len(s) != 1 || s[0] != "declined/policy" {
				t.Errorf("resolutions %v", s)
			}
		})
	}
}

func TestRunCurrentTimeRead(t *testing.T) {
	before := time.Now().Unix()
	f := injected(t, `{"method":"currentTime/read","id":5,"params":{"threadId":"t-1"}}`, func(in *agent.Interaction) []agent.InteractionResponse {
		t.Errorf("asked the chat: %+v", in)
		return nil
	})
	a := f.answers()
	if len(a) != 1 {
		t.Fatalf("answers %q", a)
	}
	var v struct {
		ID     int `json:"id"`
		Result struct {
			CurrentTimeAt *int64 `json:"currentTimeAt"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(a[0]), &v); err != nil || v.ID != 5 || v.Result.CurrentTimeAt == nil ||
		*v.Result.CurrentTimeAt < before || *v.Result.CurrentTimeAt > time.Now().Unix() {
		t.Errorf("answer %s (%v)", a[0], err)
	}
	if n := len(f.Of(agent.EventInteractionRequested)) + len(f.Of(agent.EventInteractionResolved)); n != 0 {
		t.Errorf("%d interaction events for the time", n)
	}
}

const formElicitation = `{"method":"mcpServer/elicitation/request","id":9,"params":{"threadId":"t-1","turnId":null,"serverName":"deployer","mode":"form","_meta":null,` +
	`"message":"Deploy settings","requestedSchema":{"type":"object","properties":{` +
	`"replicas":{"type":"integer","title":"Replicas","description":"How many copies"},` +
	`"env":{"type":"string","oneOf":[{"const":"prod","title":"Production"},{"const":"stg","title":"Staging"}]},` +
	`"regions":{"type":"array","items":{"enum":["eu","us","ap"]}},` +
	`"notify":{"type":"boolean","title":"Notify"},"note":{"type":"string"}},"required":["replicas","env"]}}}`

// TestRunFormElicitation: an MCP form becomes a question per field, in the
// schema's order, and the answers go back typed as the schema says.
func TestRunFormElicitation(t *testing.T) {
	var got *agent.Interaction
	f := injected(t, formElicitation, func(in *agent.Interaction) []agent.InteractionResponse {
		got = in
		return []agent.InteractionResponse{{Decision: agent.DecisionAnswer, By: "alice",
			Answers: map[string]string{"replicas": " 3", "env": "Staging", "regions": "eu\nap", "notify": "no", "note": ""}}}
	})
	if got == nil || got.Kind != agent.KindQuestion || !got.Accepts(agent.DecisionAnswer) || got.Accepts(agent.DecisionApprove) {
		t.Fatalf("interaction %+v", got)
	}
	b, _ := json.Marshal(got.Questions)
	want := `[{"id":"replicas","header":"Replicas","text":"How many copies (a whole number)"},` +
		`{"id":"env","text":"env","options":["Production","Staging"]},` +
		`{"id":"regions","text":"regions","options":["eu","us","ap"],"multi_select":true,"optional":true},` +
		`{"id":"notify","text":"Notify","options":["Yes","No"],"optional":true},` +
		`{"id":"note","text":"note","optional":true}]`
	if string(b) != want {
		t.Errorf("questions\n got %s\nwant %s", b, want)
	}
	if a := f.answers(); len(a) != 1 || a[0] != `{"id":9,"result":{"action":"accept","content":{"env":"stg","notify":false,"regions":["eu","ap"],"replicas":3},"_meta":null}}` {
		t.Errorf("answer %q", a)
	}
	if s := f.statuses(); len(s) != 1 || s[0] != "answered/alice" {
		t.Errorf("resolutions %v", s)
	}
}

// TestRunBadAnswerStaysPending: an answer that cannot be encoded sends
// nothing, says so and leaves the request open for a good answer.
func TestRunBadAnswerStaysPending(t *testing.T) {
	f := injected(t, formElicitation, func(*agent.Interaction) []agent.InteractionResponse {
		return []agent.InteractionResponse{
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"replicas": "three", "env": "prod"}},
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"replicas": "3"}},
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"replicas": "3", "env": "Dev"}},
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"replicas": "3", "env": "prod"}, By: "alice"},
		}
	})
	var refused []string
	for _, ev := range f.Of(agent.EventSystem) {
		if ev.Subtype == agent.SystemAnswerRefused {
			if ev.Interaction == nil || ev.Interaction.ID != "rpc-9" || !strings.Contains(ev.Text, "still waiting") {
				t.Errorf("refusal %+v", ev)
			}
			refused = append(refused, ev.Text)
		}
	}
	if len(refused) != 3 || !strings.Contains(refused[0], `"three" is not a whole number`) ||
		!strings.Contains(refused[1], `"env" is required`) || !strings.Contains(refused[2], `"Dev" is not one of Production, Staging`) {
		t.Errorf("refusals %q", refused)
	}
	if a := f.answers(); len(a) != 1 || a[0] != `{"id":9,"result":{"action":"accept","content":{"env":"prod","replicas":3},"_meta":null}}` {
		t.Errorf("answers %q", a)
	}
	if s := f.statuses(); len(s) != 1 || s[0] != "answered/alice" {
		t.Errorf("resolutions %v", s)
	}
}

func TestRunURLElicitation(t *testing.T) {
	line := `{"method":"mcpServer/elicitation/request","id":10,"params":{"threadId":"t-1","turnId":null,"serverName":"gh","mode":"url",` +
		`"message":"Authorize the app","url":"https://example.test/auth","elicitationId":"e-1","_meta":null}}`
	var got *agent.Interaction
	f := injected(t, line, func(in *agent.Interaction) []agent.InteractionResponse {
		got = in
		return []agent.InteractionResponse{{Decision: agent.DecisionApprove, By: "alice"}}
	})
	if got == nil || got.Kind != agent.KindElicitation || got.Reason != "Authorize the app https://example.test/auth" || !got.Accepts(agent.DecisionApprove) {
		t.Fatalf("interaction %+v", got)
	}
	if a := f.answers(); len(a) != 1 || a[0] != `{"id":10,"result":{"action":"accept","content":null,"_meta":null}}` {
		t.Errorf("answer %q", a)
	}
}

// TestRunAutoResolution: requestUserInput's autoResolutionMs is the card's
// AutoResolveAt, and an unanswered question is answered empty at that time,
// resolved timed_out by the agent.
func TestRunAutoResolution(t *testing.T) {
	line := `{"method":"item/tool/requestUserInput","id":11,"params":{"threadId":"t-1","turnId":"u-1","itemId":"call-9","isBlocking":false,"autoResolutionMs":300,` +
		`"questions":[{"id":"go","header":"Go","question":"Proceed?","isOther":false,"isSecret":false,"options":[{"label":"Yes","description":""}]}]}}`
	start := time.Now()
	var got *agent.Interaction
	f := injected(t, line, func(in *agent.Interaction) []agent.InteractionResponse {
		got = in
		return nil // nobody answers
	})
	if got == nil || got.AutoResolveAt.IsZero() || got.AutoResolveAt.Before(start.Add(300*time.Millisecond)) ||
		got.AutoResolveAt.After(time.Now().Add(300*time.Millisecond)) || got.Questions[0].AllowOther {
		t.Fatalf("interaction %+v", got)
	}
	if a := f.answers(); len(a) != 1 || a[0] != `{"id":11,"result":{"answers":{}}}` {
		t.Errorf("answer %q", a)
	}
	if s := f.statuses(); len(s) != 1 || s[0] != "timed_out/agent" {
		t.Errorf("resolutions %v", s)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("answered after %s, before the agent's deadline", took)
	}
}

func TestRunPlanUpdated(t *testing.T) {
	p := NewParser("testprov")
	p.SetThread("t-1", "m")
	evs, err := p.Parse("turn/plan/updated", json.RawMessage(`{"threadId":"t-1","turnId":"u-1","explanation":"Fix  the\nbug",`+
		`"plan":[{"step":"Read","status":"completed"},{"step":"Fix","status":"inProgress"},{"step":"Test","status":"pending"}]}`), nil)
	if err != nil || len(evs) != 1 || evs[0].Type != agent.EventPlanUpdated {
		t.Fatalf("events %+v, %v", evs, err)
	}
	b, _ := json.Marshal(evs[0].Plan)
	if want := `{"title":"Fix the bug","items":[{"text":"Read","status":"completed"},{"text":"Fix","status":"in_progress"},{"text":"Test","status":"pending"}]}`; string(b) != want {
		t.Errorf("plan %s", b)
	}
	if evs, _ := p.Parse("turn/plan/updated", json.RawMessage(`{"threadId":"other","turnId":"u-9","plan":[]}`), []byte(`{}`)); len(evs) != 1 || evs[0].Type != agent.EventProviderNative {
		t.Errorf("another thread's plan: %+v", evs)
	}
}

// TestRunQuestionChoiceRefused: a question that takes no answer of the
// user's own (isOther false) refuses one that is none of its options; the
// request stays open for a valid one.
func TestRunQuestionChoiceRefused(t *testing.T) {
	line := `{"method":"item/tool/requestUserInput","id":12,"params":{"threadId":"t-1","turnId":"u-1","itemId":"call-9","isBlocking":true,"autoResolutionMs":null,` +
		`"questions":[{"id":"go","header":"Go","question":"Proceed?","isOther":false,"isSecret":false,"options":[{"label":"Yes","description":""},{"label":"No","description":""}]}]}}`
	f := injected(t, line, func(*agent.Interaction) []agent.InteractionResponse {
		return []agent.InteractionResponse{
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"go": "Maybe"}},
			{Decision: agent.DecisionAnswer, Answers: map[string]string{"go": "No"}, By: "alice"},
		}
	})
	var refused []string
	for _, ev := range f.Of(agent.EventSystem) {
		if ev.Subtype == agent.SystemAnswerRefused {
			refused = append(refused, ev.Text)
		}
	}
	if len(refused) != 1 || !strings.Contains(refused[0], `"Maybe" is not one of Yes, No`) {
		t.Errorf("refusals %q", refused)
	}
	if a := f.answers(); len(a) != 1 || a[0] != `{"id":12,"result":{"answers":{"go":{"answers":["No"]}}}}` {
		t.Errorf("answers %q", a)
	}
	if s := f.statuses(); len(s) != 1 || s[0] != "answered/alice" {
		t.Errorf("resolutions %v", s)
	}
}
