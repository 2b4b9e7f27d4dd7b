// End-to-end tests: the provider drives the real `codex app-server` (pinned in
// package.json, installed by scripts/install-agents.sh) against the scripted
// fake Responses API, inside a network namespace where only loopback is up.
//
//	sudo THREADLINE_E2E=1 go test -run 'TestE2E' -v ./providers/codex/
//
// Without the CLI, or without the rights to create a network namespace, the
// tests skip; THREADLINE_E2E=1 turns those skips into failures.

package codex_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/codexharness"
	"github.com/threadline-bot/threadline/providers/providertest"
)

type harness = providertest.Harness[*fakeresponses.Server, *codex.Provider]

// envFakeMCP makes the test binary the MCP server (fakeresponses.ServeMCP).
const envFakeMCP = "THREADLINE_FAKE_MCP"

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if os.Getenv(envFakeMCP) == "1" {
		if err := fakeresponses.ServeMCP(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fake MCP server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	providertest.Main(m)
}

// setupE2E sets a test up (nil in the outer test process, see
// providertest.Setup): the app server talking to the fake answering with
// the test's scripts, its processes marked, h.Home its CODEX_HOME.
var setupE2E = providertest.NewSetup(providertest.CLI{Name: "codex", EnvVar: "THREADLINE_CODEX_BIN"}, fakeresponses.New, func(h *harness) *codex.Provider {
	dir, env, err := h.Fake.CodexHome(h.T.TempDir(), "fake-model")
	if err != nil {
		h.T.Fatal(err)
	}
	h.Home = dir
	return codex.New(providertest.Logger(h.T), codex.Options{Launch: h.Launch(env, 5*time.Second), CodexHome: dir})
})

// requests are the transcripts of the requests the fake was sent.
func requests(fake *fakeresponses.Server) []string { return providertest.Transcripts(fake.Requests()) }

// answered runs a turn that may ask (the default approval), every
// interaction answered with decide.
func answered(h *harness, req agent.RunRequest, decide func(in *agent.Interaction) agent.InteractionResponse) *providertest.Result {
	h.T.Helper()
	ch, on := providertest.Answering(decide)
	req.Responses = ch
	return h.Run(req, on)
}

func TestE2EStreamedText(t *testing.T) {
	h := setupE2E(t, providertest.TextScript(fakeresponses.When, fakeresponses.Thinking))
	if h == nil {
		return
	}
	r := providertest.CheckStreamedText(t, h.Run)
	if u := r.Of(agent.EventUsageUpdated); len(u) == 0 || u[len(u)-1].Usage.InputTokens != 120 {
		t.Errorf("usage %+v", u)
	}
	reqs := h.Fake.Requests()
	if len(reqs) != 1 || !reqs[0].Body.Stream || reqs[0].Prompt() != providertest.TextPrompt || !reqs[0].HasAuth {
		t.Errorf("fake saw %d requests", len(reqs))
	}
}

// shellAnswered runs a turn whose model runs cmd in the shell, the approval
// answered with d, and fails at once unless Run returned nil. It returns the
// harness and the run (nil outside the netns).
func shellAnswered(t *testing.T, cmd string, d agent.Decision) (*harness, *providertest.Result) {
	t.Helper()
	h := setupE2E(t, fakeresponses.When("e2e-shell", fakeresponses.Shell(cmd)))
	if h == nil {
		return nil, nil
	}
	r := answered(h, agent.RunRequest{Prompt: "e2e-shell: run it"}, providertest.Always(d, nil))
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	return h, r
}

func TestE2EApprove(t *testing.T) {
	for _, tt := range []struct {
		name     string
		decision agent.Decision
		status   string
	}{
		{"approve", agent.DecisionApprove, agent.StatusApproved},
		{"session", agent.DecisionApproveSession, agent.StatusApprovedForSession},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h, r := shellAnswered(t, "echo e2e-shell-ok > marker.txt && cat marker.txt", tt.decision)
			if h == nil {
				return
			}
			req := r.Of(agent.EventInteractionRequested)
			if len(req) != 1 || req[0].Interaction.Kind != agent.KindCommandApproval || !strings.Contains(req[0].Interaction.Command, "e2e-shell-ok") {
				t.Fatalf("interaction.requested %+v", req)
			}
			res := r.Of(agent.EventInteractionResolved)
			if len(res) != 1 || res[0].Resolution.Status != tt.status || res[0].Resolution.By != "e2e" {
				t.Errorf("interaction.resolved %+v", res)
			}
			done := r.Of(agent.EventToolCompleted)
			if len(done) != 1 || done[0].Tool.IsError || !strings.Contains(done[0].Tool.Output, "e2e-shell-ok") {
				t.Errorf("tool.completed %+v", done)
			}
			h.CheckFile("marker.txt", "e2e-shell-ok")
			if last := r.Last(); last.Type != agent.EventRunCompleted || !strings.Contains(last.Text, "e2e-shell-ok") {
				t.Errorf("last event %+v", last)
			}
			reqs := h.Fake.Requests()
			if len(reqs) != 2 {
				t.Fatalf("fake saw %d requests, want 2", len(reqs))
			}
			if outs := reqs[1].FunctionOutputs(); len(outs) != 1 || !strings.Contains(outs[0].OutputText(), "e2e-shell-ok") {
				t.Errorf("function_call_output sent to the model: %+v", outs)
			}
		})
	}
}

func TestE2EDecline(t *testing.T) {
	h, r := shellAnswered(t, "echo nope > marker.txt", agent.DecisionDecline)
	if h == nil {
		return
	}
	if res := r.Of(agent.EventInteractionResolved); len(res) != 1 || res[0].Resolution.Status != agent.StatusDeclined {
		t.Errorf("interaction.resolved %+v", res)
	}
	if h.Exists("marker.txt") {
		t.Error("the declined command ran")
	}
	if last := r.Last(); last.Type != agent.EventRunCompleted || !strings.Contains(last.Text, "rejected") {
		t.Errorf("last event %+v (the model is told the user rejected it)", last)
	}
}

func TestE2ECancelMidStream(t *testing.T) {
	// run.interrupted from turn/completed.
	providertest.CancelMidStream(t, setupE2E, fakeresponses.When, fakeresponses.Slow, 5*time.Second, "interrupted")
}

// colorQuestion is the question the model asks in the question tests.
var colorQuestion = fakeresponses.Question{
	ID: "color", Header: "Color", Question: "Which color?",
	Options: []fakeresponses.Option{{Label: "Red", Description: "warm"}, {Label: "Blue", Description: "cool"}},
}

// askColor runs a Plan-mode turn whose model asks colorQuestion, answered
// with answer, and checks that it completes with the answer back in the
// model's hands. It returns the harness and the run (nil outside the
// netns).
func askColor(t *testing.T, answer string) (*harness, *providertest.Result) {
	t.Helper()
	h := setupE2E(t, fakeresponses.When("e2e-ask", fakeresponses.AskUser(colorQuestion)))
	if h == nil {
		return nil, nil
	}
	r := answered(h, agent.RunRequest{Prompt: "e2e-ask: ask me", Mode: agent.ModePlan}, providertest.Always(agent.DecisionAnswer, map[string]string{"color": answer}))
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunCompleted || !strings.Contains(last.Text, `"`+answer+`"`) {
		t.Errorf("last event %+v", last)
	}
	return h, r
}

func TestE2EQuestionInPlanMode(t *testing.T) {
	h, r := askColor(t, "Blue")
	if h == nil {
		return
	}
	req := r.Of(agent.EventInteractionRequested)
	if len(req) != 1 || req[0].Interaction.Kind != agent.KindQuestion || len(req[0].Interaction.Questions) != 1 || req[0].Interaction.Questions[0].Text != "Which color?" {
		t.Fatalf("interaction.requested %+v", req)
	}
	if res := r.Of(agent.EventInteractionResolved); len(res) != 1 || res[0].Resolution.Status != agent.StatusAnswered {
		t.Errorf("interaction.resolved %+v", res)
	}
	reqs := h.Fake.Requests()
	if len(reqs) == 0 || !strings.Contains(strings.Join(reqs[0].ToolNames(), ","), "request_user_input") {
		t.Errorf("request_user_input not offered (Plan mode not applied)")
	}
}

func TestE2EInterruptWhileApprovalPending(t *testing.T) {
	providertest.CancelPending(t, setupE2E, fakeresponses.When(providertest.PendingPrompt, fakeresponses.Shell("echo never > marker.txt")),
		"marker.txt", 5*time.Second, agent.StatusTurnEnded)
}

func TestE2EResumeInFreshProcess(t *testing.T) {
	providertest.Resume(t, setupE2E, fakeresponses.WhenLast, fakeresponses.Text, "fake-model", requests)
}

func TestE2EResumeUnknownThread(t *testing.T) {
	providertest.UnknownSession(t, setupE2E, agent.RunRequest{}, "0b7c5a34-5f0e-4c53-9d43-2f3a3c1f9e10", requests)
}

func TestE2EAPIError(t *testing.T) {
	h := setupE2E(t, fakeresponses.When("e2e-bad", fakeresponses.Error(400, "fake: scripted failure")))
	if h == nil {
		return
	}
	providertest.CheckAPIError(t, h.Run, "scripted failure")
}

// TestE2EDetection: the registry's probe of the descriptor reads the real
// CLI's version (through the descriptor's pattern), and the catalog comes
// from the App Server.
func TestE2EDetection(t *testing.T) {
	h := setupE2E(t)
	if h == nil {
		return
	}
	d := codex.Descriptor()
	d.Bin = h.Bin
	r := registry.Probe(context.Background(), []registry.Definition{d}, registry.ProbeOptions{VersionTimeout: time.Minute, Confine: providertest.ProbeConfine(t)})[0]
	if r.Status == registry.StatusMissing || r.Version != "0.169.0" || r.VersionWarning != "" || r.Path != h.Bin {
		t.Errorf("probe %+v", r)
	}
	ctx, _ := providertest.Confine(t, context.Background(), agent.RunRequest{Cwd: h.Cwd})
	cat, err := h.Prov.Catalog(ctx, "")
	if err != nil || cat.Source != codexharness.SourceAppServer || len(cat.Modes) != 2 {
		t.Errorf("catalog source %q, %d modes, err %v", cat.Source, len(cat.Modes), err)
	}
}

// TestE2EPlanUpdated: the model's update_plan call (the tool is on by
// DefaultArgs: the fake model has no catalog metadata that would offer it)
// reaches the chat as plan.updated, the tool's own output going back to the
// model as usual.
func TestE2EPlanUpdated(t *testing.T) {
	h := setupE2E(t, fakeresponses.When("e2e-plan", fakeresponses.ToolCall("update_plan", map[string]any{
		"explanation": "Fix the bug",
		"plan":        []map[string]string{{"step": "Read", "status": "completed"}, {"step": "Fix", "status": "in_progress"}, {"step": "Test", "status": "pending"}},
	})))
	if h == nil {
		return
	}
	r := h.Run(agent.RunRequest{Prompt: "e2e-plan: plan it"}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
	plans := r.Of(agent.EventPlanUpdated)
	if len(plans) != 1 {
		t.Fatalf("plan.updated %+v", plans)
	}
	want := agent.Plan{Title: "Fix the bug", Items: []agent.PlanItem{{Text: "Read", Status: agent.PlanCompleted}, {Text: "Fix", Status: agent.PlanInProgress}, {Text: "Test", Status: agent.PlanPending}}}
	if got := *plans[0].Plan; got.Title != want.Title || fmt.Sprint(got.Items) != fmt.Sprint(want.Items) {
		t.Errorf("plan %+v, want %+v", got, want)
	}
	if !strings.Contains(r.Last().Text, "Plan updated") {
		t.Errorf("the model did not get the tool's output: %q", r.Last().Text)
	}
}

// TestE2EQuestionOtherAnswer: Codex offers "Other" on every question with
// options (isOther): the card allows a free-text answer, and it reaches the
// model as typed.
func TestE2EQuestionOtherAnswer(t *testing.T) {
	h, r := askColor(t, "Teal, please")
	if h == nil {
		return
	}
	req := r.Of(agent.EventInteractionRequested)
	if len(req) != 1 || len(req[0].Interaction.Questions) != 1 || !req[0].Interaction.Questions[0].AllowOther || !req[0].Interaction.AutoResolveAt.IsZero() {
		t.Fatalf("interaction.requested %+v", req)
	}
}

// TestE2EMCPFormElicitation: a real MCP server's form (elicitation/create)
// reaches the chat as a question per field, after the MCP tool-call
// approval, and the answers go back typed as the form asks.
func TestE2EMCPFormElicitation(t *testing.T) {
	h := setupE2E(t, fakeresponses.When("e2e-mcp", fakeresponses.MCPCall(fakeresponses.MCPTool, map[string]string{"service": "web"})))
	if h == nil {
		return
	}
	providertest.AppendFile(t, h.Home, "config.toml", fakeresponses.MCPConfigTOML("fakemcp", providertest.SelfExe(t), nil, map[string]string{envFakeMCP: "1"}))
	var asked []*agent.Interaction
	r := answered(h, agent.RunRequest{Prompt: "e2e-mcp: deploy web"}, func(in *agent.Interaction) agent.InteractionResponse {
		asked = append(asked, in)
		if in.Kind == agent.KindQuestion {
			return agent.InteractionResponse{Decision: agent.DecisionAnswer, Answers: map[string]string{"replicas": "2", "env": "Staging", "notify": "yes"}, By: "e2e"}
		}
		return agent.InteractionResponse{Decision: agent.DecisionApprove, By: "e2e"}
	})
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
	if len(asked) != 2 || asked[0].Kind != agent.KindElicitation || asked[1].Kind != agent.KindQuestion {
		t.Fatalf("asked %d: %+v", len(asked), asked)
	}
	form := asked[1]
	if form.Accepts(agent.DecisionApprove) || !form.Accepts(agent.DecisionAnswer) {
		t.Errorf("the form takes approvals: %+v", form.Options)
	}
	var ids []string
	for _, q := range form.Questions {
		ids = append(ids, fmt.Sprintf("%s:%v:%v", q.ID, q.Options, q.Optional))
	}
	// In the order codex forwards the properties (it sorts them by name).
	if got := strings.Join(ids, " "); got != "env:[Production Staging]:false notify:[Yes No]:true replicas:[]:false" {
		t.Errorf("questions %s", got)
	}
	if got := strings.Join(r.Resolutions(), ","); got != "approved,answered" {
		t.Errorf("resolutions %q", got)
	}
	done := r.Of(agent.EventToolCompleted)
	if len(done) != 1 || !strings.Contains(done[0].Tool.Output, `"content":{"env":"stg","notify":true,"replicas":2}`) {
		t.Errorf("the MCP server got %+v", done)
	}
}

// TestE2EAsOrdinaryUser: the real Codex streams text and runs an approved
// command sandboxed as an ordinary user (no uid switch: the runs start as
// that user itself), as root's tests above run it as the agent user.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^(TestE2EStreamedText|TestE2EApprove)$")
}

// TestE2EMCPImage: the model calls an MCP tool (the test binary as the
// server, fakeresponses.ServeMCP) whose result is an image block: codex's
// completed mcpToolCall item carries it, and it becomes an image event with
// the PNG byte for byte, after the tool's completion.
func TestE2EMCPImage(t *testing.T) {
	h := setupE2E(t, fakeresponses.When("e2e-chart", fakeresponses.MCPCall(fakeresponses.MCPImageTool, map[string]any{"title": "load"})))
	if h == nil {
		return
	}
	providertest.AppendFile(t, h.Home, "config.toml", fakeresponses.MCPConfigTOML("fakemcp", providertest.SelfExe(t), nil, map[string]string{envFakeMCP: "1"}))
	r := answered(h, agent.RunRequest{Prompt: "e2e-chart: draw the load"}, providertest.Always(agent.DecisionApprove, nil))
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	imgs := r.Of(agent.EventImage)
	if len(imgs) != 1 || !bytes.Equal(imgs[0].Image.Data, fakeresponses.MCPImage) || imgs[0].Image.MediaType != "image/png" {
		for _, e := range r.Of(agent.EventProviderNative) {
			t.Logf("native %s %.400s", e.Native.Kind, e.Native.Payload)
		}
		t.Fatalf("image events %+v, want one with the tool's PNG", imgs)
	}
	done := r.Of(agent.EventToolCompleted)
	if len(done) != 1 || done[0].Tool.ID != imgs[0].Image.ToolID || !strings.Contains(done[0].Tool.Output, "a chart") {
		t.Errorf("tool completions %+v", done)
	}
}
