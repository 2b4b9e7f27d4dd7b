// End-to-end tests: the provider drives the real Claude Code CLI (pinned in
// package.json, installed by scripts/install-agents.sh) against the scripted
// fake Messages API, inside a network namespace where only loopback is up.
//
//	sudo THREADLINE_E2E=1 go test -run 'TestE2E' -v ./providers/claude/
//
// Without the CLI, or without the rights to create a network namespace, the
// tests skip; THREADLINE_E2E=1 turns those skips into failures. Also here:
// the CLI's own sign-in failure becomes the hint, and the model bound to
// its flag reaches the API.

package claude_test

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/claude"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/providertest"
)

type harness = providertest.Harness[*fakeapi.Server, *claude.Provider]

// setupE2E sets a test up (nil in the outer test process, see
// providertest.Setup): the CLI talking to the fake answering with the
// test's scripts, its processes marked (Harness.Launch).
var setupE2E = setupEnv(func(*harness, *claude.Options) {})

// setupEnv is setupE2E with the provider's options edited by edit.
func setupEnv(edit func(h *harness, opts *claude.Options)) providertest.SetupFunc[fakeapi.Script, *fakeapi.Server, *claude.Provider] {
	return providertest.NewSetup(providertest.CLI{Name: "claude", EnvVar: fakeapi.EnvClaudeBin}, fakeapi.New, func(h *harness) *claude.Provider {
		opts := claude.Options{Launch: h.Launch(h.Fake.ClaudeEnv(h.T.TempDir()), 5*time.Second)}
		edit(h, &opts)
		return claude.New(providertest.Logger(h.T), opts)
	})
}

func TestE2EStreamedText(t *testing.T) {
	h := setupE2E(t, providertest.TextScript(fakeapi.When, fakeapi.Thinking))
	if h == nil {
		return
	}
	providertest.CheckStreamedText(t, h.Run)
	reqs := h.Fake.MessageRequests()
	if len(reqs) != 1 || !reqs[0].Body.Stream || reqs[0].Prompt() != providertest.TextPrompt {
		t.Errorf("fake saw %d requests; first prompt %q", len(reqs), firstPrompt(reqs))
	}
}

func firstPrompt(reqs []fakeapi.Request) string {
	if len(reqs) == 0 {
		return ""
	}
	return reqs[0].Prompt()
}

func TestE2EBashToolRoundTrip(t *testing.T) {
	input := map[string]any{
		"command":     "echo e2e-tool-ok > marker.txt && cat marker.txt",
		"description": "Write and print a marker",
	}
	h := setupE2E(t, fakeapi.When("e2e-bash", fakeapi.ToolUse("Bash", input)))
	if h == nil {
		return
	}
	r := h.Run(agent.RunRequest{Prompt: "e2e-bash: write the marker", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	started := r.Of(agent.EventToolStarted)
	if len(started) != 1 || started[0].Tool == nil || started[0].Tool.Name != "Bash" {
		t.Fatalf("tool.started %+v", started)
	}
	completed := r.Of(agent.EventToolCompleted)
	if len(completed) != 1 || completed[0].Tool == nil || completed[0].Tool.ID != started[0].Tool.ID ||
		completed[0].Tool.IsError || !strings.Contains(completed[0].Tool.Output, "e2e-tool-ok") {
		t.Fatalf("tool.completed %+v", completed)
	}
	h.CheckFile("marker.txt", "e2e-tool-ok")
	reqs := h.Fake.MessageRequests()
	if len(reqs) != 2 {
		t.Fatalf("fake saw %d requests, want 2 (prompt, tool_result)", len(reqs))
	}
	tr := reqs[1].ToolResults()
	if len(tr) != 1 || tr[0].ToolUseID != started[0].Tool.ID || tr[0].IsError || strings.TrimSpace(tr[0].ResultText()) != "e2e-tool-ok" {
		t.Errorf("tool_result sent to the API: %+v", tr)
	}
	if last := r.Last(); last.Type != agent.EventRunCompleted || !strings.Contains(last.Text, "Tool result: e2e-tool-ok") {
		t.Errorf("last event %+v", last)
	}
}

// requests are the transcripts of the requests the fake was sent.
func requests(fake *fakeapi.Server) []string { return providertest.Transcripts(fake.MessageRequests()) }

func TestE2EResume(t *testing.T) {
	providertest.Resume(t, setupE2E, fakeapi.When, fakeapi.Text, "", requests)
}

func TestE2EResumeUnknownSession(t *testing.T) {
	providertest.UnknownSession(t, setupE2E, agent.RunRequest{}, "0b7c5a34-5f0e-4c53-9d43-2f3a3c1f9e10", requests)
}

func TestE2ECancelMidStream(t *testing.T) {
	providertest.CancelMidStream(t, setupE2E, fakeapi.When, fakeapi.Slow, 8*time.Second, "")
}

func TestE2EAPIError(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-bad", fakeapi.Error(400, "invalid_request_error", "fake: scripted failure")))
	if h == nil {
		return
	}
	providertest.CheckAPIError(t, h.Run, "scripted failure")
}

func TestE2EApprovalDecline(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-deny", fakeapi.ToolUse("Bash", map[string]any{
		"command": "touch must-not-exist.txt", "description": "Create a file",
	})))
	if h == nil {
		return
	}
	ch, on := providertest.Answering(func(in *agent.Interaction) agent.InteractionResponse {
		if in.Kind != agent.KindCommandApproval || in.Command != "touch must-not-exist.txt" || string(in.NativeID) == "" {
			t.Errorf("interaction %+v", in)
		}
		return agent.InteractionResponse{Decision: agent.DecisionDecline, By: "tester"}
	})
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-deny please", Approval: agent.ApprovalAsk, Responses: ch}, on)
	if got := strings.Join(r.Resolutions(), ","); got != "declined" {
		t.Errorf("resolutions %q", got)
	}
	if h.Exists("must-not-exist.txt") {
		t.Error("the declined command ran")
	}
	if !strings.Contains(r.Text(), "Tool error:") || !strings.Contains(r.Text(), "Denied by the chat user") {
		t.Errorf("the model did not get the denial: %q", r.Text())
	}
}

func TestE2EAskUserQuestion(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-ask", fakeapi.ToolUse("AskUserQuestion", map[string]any{
		"questions": []map[string]any{{
			"question": "Which color?", "header": "Color", "multiSelect": false,
			"options": []map[string]any{{"label": "Blue", "description": "calm"}, {"label": "Red", "description": "bold"}},
		}},
	})))
	if h == nil {
		return
	}
	ch, on := providertest.Answering(func(in *agent.Interaction) agent.InteractionResponse {
		if in.Kind != agent.KindQuestion || len(in.Questions) != 1 || strings.Join(in.Questions[0].Options, ",") != "Blue,Red" {
			t.Errorf("interaction %+v", in)
			return agent.InteractionResponse{Decision: agent.DecisionDecline}
		}
		return agent.InteractionResponse{Decision: agent.DecisionAnswer, Answers: map[string]string{in.Questions[0].ID: "Blue"}, By: "tester"}
	})
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-ask me", Approval: agent.ApprovalAsk, Responses: ch}, on)
	if got := strings.Join(r.Resolutions(), ","); got != "answered" {
		t.Errorf("resolutions %q", got)
	}
	if !strings.Contains(r.Text(), `"Which color?"="Blue"`) {
		t.Errorf("the answer did not reach the model: %q", r.Text())
	}
}

func TestE2EStopAtApproval(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-stop", fakeapi.ToolUse("Bash", map[string]any{
		"command": "touch must-not-exist.txt", "description": "Create a file",
	})))
	if h == nil {
		return
	}
	ch, on := providertest.Answering(func(*agent.Interaction) agent.InteractionResponse {
		return agent.InteractionResponse{Decision: agent.DecisionCancel, By: "tester"}
	})
	r := h.Ends(agent.EventRunInterrupted, agent.RunRequest{Prompt: "e2e-stop here", Approval: agent.ApprovalAsk, Responses: ch}, on)
	if got := strings.Join(r.Resolutions(), ","); got != "cancelled" {
		t.Errorf("resolutions %q", got)
	}
}

func TestE2ECancelWhileApprovalPending(t *testing.T) {
	providertest.CancelPending(t, setupE2E, fakeapi.When(providertest.PendingPrompt, fakeapi.ToolUse("Bash", map[string]any{
		"command": "touch must-not-exist.txt", "description": "Create a file",
	})), "must-not-exist.txt", 15*time.Second, agent.StatusCancelled, agent.StatusTurnEnded)
}

// TestE2EApproveForSession: "approve for the session" hands the CLI its own
// suggested rule, scoped to the session, so the same command is not asked
// again in the turn (another command still is); a plain approve is asked
// each time. Nothing is written to the project's settings.
func TestE2EApproveForSession(t *testing.T) {
	for _, tt := range []struct {
		name     string
		decision agent.Decision
		statuses string
	}{
		{"session", agent.DecisionApproveSession, "approved_for_session,approved_for_session"},
		{"once", agent.DecisionApprove, "approved,approved,approved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			mkdir := map[string]any{"command": "mkdir -p made/once", "description": "Make a directory"}
			h := setupE2E(t, fakeapi.When("e2e-twice", fakeapi.Sequence(
				fakeapi.Call("Bash", mkdir), fakeapi.Call("Bash", mkdir),
				fakeapi.Call("Bash", map[string]any{"command": "touch other.txt", "description": "Another command"}),
				fakeapi.Text("All done.")),
			), fakeapi.When("e2e-again", fakeapi.ToolUse("Bash", mkdir)))
			if h == nil {
				return
			}
			var asked []string
			ch, on := providertest.Answering(func(in *agent.Interaction) agent.InteractionResponse {
				asked = append(asked, in.Command)
				if !in.Accepts(agent.DecisionApproveSession) {
					t.Errorf("no approve for the session on %+v", in.Options)
				}
				return agent.InteractionResponse{Decision: tt.decision, By: "tester"}
			})
			r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-twice: make it twice", Approval: agent.ApprovalAsk, Responses: ch}, on)
			want := "mkdir -p made/once|mkdir -p made/once|touch other.txt"
			if tt.decision == agent.DecisionApproveSession {
				want = "mkdir -p made/once|touch other.txt"
			}
			if got := strings.Join(asked, "|"); got != want {
				t.Errorf("asked for %q, want %q", got, want)
			}
			if got := strings.Join(r.Resolutions(), ","); got != tt.statuses {
				t.Errorf("resolutions %q, want %q", got, tt.statuses)
			}
			if n := len(r.Of(agent.EventToolCompleted)); n != 3 {
				t.Errorf("%d tool.completed, want 3", n)
			}
			for _, p := range []string{"made/once", "other.txt"} {
				if !h.Exists(p) {
					t.Errorf("the approved command did not run: no %s", p)
				}
			}
			if h.Exists(".claude") {
				t.Error("the grant was written to the project's .claude settings")
			}
			// The next turn is a new CLI process: the grant still holds in
			// the session (answered by it, nobody asked); a plain approve
			// is asked again.
			r2 := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-again: once more", ResumeID: r.SessionID(), Approval: agent.ApprovalAsk, Responses: ch}, on)
			res := r2.Of(agent.EventInteractionResolved)
			if tt.decision == agent.DecisionApproveSession {
				// (The card is still posted, already resolved: the grant answered.)
				if len(res) != 1 || res[0].Resolution.Status != agent.StatusApprovedForSession || res[0].Resolution.By != claude.ByGrant {
					t.Errorf("turn 2 resolved %v, want approved_for_session by the grant", r2.Resolutions())
				}
			} else if len(res) != 1 || res[0].Resolution.By != "tester" {
				t.Errorf("turn 2 resolved %v, want the user asked again", r2.Resolutions())
			}
		})
	}
}

// TestE2EPlanFromTaskTools: the todo tools are on by default (2.1.328 has
// no TodoWrite; DefaultEnv's CLAUDE_CODE_ENABLE_TODO_TOOLS=1 offers
// TaskCreate and TaskUpdate), and each change of the task list is a
// plan.updated with the whole list, next to the tool events.
func TestE2EPlanFromTaskTools(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-plan", fakeapi.Sequence(
		fakeapi.Call("TaskCreate", map[string]any{"subject": "Read the code", "description": "Read it", "activeForm": "Reading the code"}),
		fakeapi.Call("TaskCreate", map[string]any{"subject": "Write the fix", "description": "Fix it", "activeForm": "Writing the fix"}),
		fakeapi.Call("TaskCreate", map[string]any{"subject": "Run the tests", "description": "Test it", "activeForm": "Running the tests"}),
		fakeapi.Call("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"}),
		fakeapi.Call("TaskUpdate", map[string]any{"taskId": "2", "status": "in_progress"}),
		fakeapi.Text("Planned."),
	)))
	if h == nil {
		return
	}
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-plan: plan the work", Approval: agent.ApprovalAccept}, nil)
	plans := r.Of(agent.EventPlanUpdated)
	if len(plans) != 5 {
		t.Fatalf("%d plan.updated, want 5", len(plans))
	}
	last := plans[len(plans)-1].Plan
	want := []agent.PlanItem{{Text: "Read the code", Status: agent.PlanCompleted}, {Text: "Write the fix", Status: agent.PlanInProgress}, {Text: "Run the tests", Status: agent.PlanPending}}
	if !slices.Equal(last.Items, want) {
		t.Errorf("final plan %+v, want %+v", last.Items, want)
	}
	if n := len(r.Of(agent.EventToolCompleted)); n != 5 {
		t.Errorf("%d tool.completed, want 5 (the tool events stay)", n)
	}
}

// TestE2EAskMultiSelect: the options picked on a multi-select question (one
// a line) reach the model as the CLI reports them.
func TestE2EAskMultiSelect(t *testing.T) {
	h := setupE2E(t, fakeapi.When("e2e-multi", fakeapi.ToolUse("AskUserQuestion", map[string]any{
		"questions": []map[string]any{{
			"question": "Which toppings?", "header": "Pizza", "multiSelect": true,
			"options": []map[string]any{{"label": "Ham", "description": "salty"}, {"label": "Olives", "description": "briny"}, {"label": "Basil", "description": "fresh"}},
		}},
	})))
	if h == nil {
		return
	}
	ch, on := providertest.Answering(func(in *agent.Interaction) agent.InteractionResponse {
		if len(in.Questions) != 1 || !in.Questions[0].MultiSelect || !in.Questions[0].AllowOther {
			t.Errorf("questions %+v", in.Questions)
		}
		return agent.InteractionResponse{Decision: agent.DecisionAnswer, Answers: map[string]string{"Which toppings?": "Ham\nBasil"}, By: "tester"}
	})
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-multi pick", Approval: agent.ApprovalAsk, Responses: ch}, on)
	if !strings.Contains(r.Text(), `"Which toppings?"="Ham, Basil"`) {
		t.Errorf("the answer did not reach the model: %q", r.Text())
	}
}

// TestE2ENotLoggedInBecomesHint: with no key and no login the CLI answers
// "Not logged in · Please run /login"; the run fails with how to sign in.
func TestE2ENotLoggedInBecomesHint(t *testing.T) {
	h := setupEnv(func(_ *harness, opts *claude.Options) {
		delete(opts.Env, "ANTHROPIC_API_KEY")
		opts.HostEnv = func() []string { return []string{"PATH=" + os.Getenv("PATH")} }
	})(t, fakeapi.Text("must not be asked"))
	if h == nil {
		return
	}
	last := providertest.CheckFailed(t, h.Run(agent.RunRequest{Prompt: "hello"}, nil), "Not logged in")
	if !strings.HasPrefix(last.Text, claude.NotSignedInHint) {
		t.Errorf("run.failed %q, want the sign-in hint", last.Text)
	}
	if n := len(h.Fake.MessageRequests()); n != 0 {
		t.Errorf("the CLI called the API %d times without a key", n)
	}
}

// TestE2EModelBoundToFlag: the real Claude CLI takes the model bound to its
// flag (--model=M) and sends it to the API.
func TestE2EModelBoundToFlag(t *testing.T) {
	h := setupE2E(t, fakeapi.Text("ok"))
	if h == nil {
		return
	}
	const model = "claude-test-model-9"
	h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "which model", Model: model, Approval: agent.ApprovalDeny}, nil)
	reqs := h.Fake.MessageRequests()
	found := false
	for _, q := range reqs {
		if q.Body.Model == model {
			found = true
		}
	}
	if !found {
		t.Fatalf("no API request used --model=%s (%d requests)", model, len(reqs))
	}
}

// TestE2EAsOrdinaryUser: the real Claude Code streams text and runs a tool
// sandboxed as an ordinary user (no uid switch: the runs start as that
// user itself), as root's tests above run it as the agent user.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^(TestE2EStreamedText|TestE2EBashToolRoundTrip)$")
}
