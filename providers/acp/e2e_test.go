// End-to-end tests: the provider drives the real opencode, qwen and gemini
// CLIs (pinned in package.json) against the scripted fake LLM of
// providertest/fakeopenai (Chat Completions for opencode and qwen, the
// Gemini-API shim for gemini), inside a network namespace where only loopback
// is up.
//
//	sudo THREADLINE_E2E=1 go test -run 'TestE2E' -v ./providers/acp/
//
// Without a CLI, or without the rights to create a network namespace, the
// tests skip; THREADLINE_E2E=1 turns those skips into failures.

package acp_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

var clis = []familyCLI{
	{def: acp.Opencode(), envVar: "THREADLINE_OPENCODE_BIN", model: fakeopenai.DefaultModel, more: []scenario{{"flag-model", testFlagModel}}},
	{def: acp.Qwen(), envVar: "THREADLINE_QWEN_BIN", model: fakeopenai.DefaultModel},
	{def: acp.Gemini(), envVar: "THREADLINE_GEMINI_BIN", model: fakeopenai.GeminiModel},
}

// e2e is a harness whose fake is fakeopenai, read directly.
type e2e struct {
	*familyHarness
	fake *fakeopenai.Server
}

// setup returns nil in the outer test process and the harness inside the
// netns (see setupFamily), its fake answering with scripts.
func setup(t *testing.T, c familyCLI, scripts ...fakeopenai.Script) *e2e {
	t.Helper()
	var fake *fakeopenai.Server
	h := newHarness(t, c, func(t *testing.T) modelServer {
		fake = fakeopenai.New(t, scripts...)
		return chatServer{fake}
	})
	if h == nil {
		return nil
	}
	return &e2e{familyHarness: h, fake: fake}
}

// chatTranscripts renders what the fake saw, with the tools offered, for
// failure messages.
func chatTranscripts(fake *fakeopenai.Server) string {
	var sb strings.Builder
	for i, r := range fake.ChatRequests() {
		fmt.Fprintf(&sb, "--- request %d (%d tools)\n%s", i+1, len(r.Tools), r.Transcript())
	}
	return sb.String()
}

// chatScenarios are the subtests of each CLI of clis.
var chatScenarios = []scenario{
	{"tool", testTool}, {"allow", testAllow}, {"reject", testReject}, {"cancel", testCancel},
	{"cancel-permission", testCancelPermission}, {"resume", testResume}, {"background", testFamilyBackground},
	{"bogus-session", testBogusSession},
}

func TestE2E(t *testing.T) {
	for _, g := range []struct {
		clis      []familyCLI
		scenarios []scenario
	}{{clis, chatScenarios}, {familyCLIs, familyScenarios}} {
		for _, c := range g.clis {
			t.Run(string(c.def.ID), func(t *testing.T) {
				for _, s := range slices.Concat(g.scenarios, c.more) {
					t.Run(s.name, func(t *testing.T) { s.run(t, c) })
				}
			})
		}
	}
}

// testTool: a shell tool round trip under the accept policy.
func testTool(t *testing.T, c familyCLI) {
	h := setup(t, c, fakeopenai.When("e2e-tool", fakeopenai.Shell("echo e2e-tool-ok > marker.txt && cat marker.txt")))
	if h == nil {
		return
	}
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-tool: write the marker", Approval: agent.ApprovalAccept}, nil)
	started, completed := r.Of(agent.EventToolStarted), r.Of(agent.EventToolCompleted)
	if len(started) != 1 || len(completed) != 1 || completed[0].Tool.ID != started[0].Tool.ID || completed[0].Tool.IsError {
		t.Fatalf("tool.started %+v, tool.completed %+v", started, completed)
	}
	h.CheckFile("marker.txt", "e2e-tool-ok")
	// Any approval the agent still asked for (gemini downgrades yolo in an
	// untrusted folder) was answered by the policy.
	for _, ev := range r.Of(agent.EventInteractionResolved) {
		if ev.Resolution.By != "policy" || ev.Resolution.Status != agent.StatusApproved {
			t.Errorf("resolution %+v", ev.Resolution)
		}
	}
	// The tool result went back to the model (qwen adds side calls after
	// the turn, so look at every request).
	sent := false
	for _, req := range h.fake.ChatRequests() {
		if tr := req.ToolResults(); len(tr) == 1 && strings.Contains(tr[0].Text, "e2e-tool-ok") {
			sent = true
		}
	}
	if !sent {
		t.Errorf("no request carried the tool result; transcripts:\n%s", chatTranscripts(h.fake))
	}
	if !strings.Contains(r.Last().Text, "Tool result:") || !strings.Contains(r.Text(), "e2e-tool-ok") {
		t.Errorf("final answer %q", r.Last().Text)
	}
	if u := r.Of(agent.EventUsageUpdated); len(u) != 1 || u[0].Usage.InputTokens == 0 {
		t.Errorf("usage %+v", u)
	}
}

func testCancel(t *testing.T, c familyCLI) {
	h := setup(t, c, providertest.SlowScript(fakeopenai.When, func(n int, every time.Duration) fakeopenai.Script {
		return fakeopenai.WithTools(fakeopenai.Slow(n, every))
	}))
	if h == nil {
		return
	}
	// The agent answers stopReason cancelled.
	providertest.CheckCancelMidStream(t, h.Run, 8*time.Second, "cancelled")
}

func testCancelPermission(t *testing.T, c familyCLI) {
	h := setup(t, c, fakeopenai.When("e2e-never", fakeopenai.Shell("echo never > never.txt")))
	if h == nil {
		return
	}
	// The limit runs from the cancel: the CLI's own start-up (slow on a
	// loaded machine) is not the adapter's.
	req := agent.RunRequest{Prompt: "e2e-never: run it", Responses: make(chan agent.InteractionResponse)}
	r := providertest.CheckCancelAtInteraction(t, h.Run, req, 15*time.Second)
	if res := r.Of(agent.EventInteractionResolved); len(res) != 1 || res[0].Resolution.Status != agent.StatusCancelled {
		t.Errorf("resolution %+v", res)
	}
	if h.Exists("never.txt") {
		t.Error("the command ran after the cancel")
	}
}

func testResume(t *testing.T, c familyCLI) {
	h := setup(t, c, providertest.ResumeScripts(fakeopenai.When, fakeopenai.Text)...)
	if h == nil {
		return
	}
	r1 := h.Run(agent.RunRequest{Prompt: providertest.RememberPrompt}, nil)
	if r1.Err != nil {
		t.Fatalf("run 1: %v", r1.Err)
	}
	sid := r1.SessionID()
	if !c.def.Resume {
		// gemini: no native session is reported, and a resume is refused
		// before anything runs (the core then uses the visible transcript).
		if sid != "" {
			t.Fatalf("run 1 reported session %q for a definition without resume", sid)
		}
		r2 := h.Run(agent.RunRequest{Prompt: "e2e-recall", ResumeID: "any"}, nil)
		if !errors.Is(r2.Err, agent.ErrSessionNotFound) || len(r2.Events) != 0 {
			t.Fatalf("run 2 = %v, %d events", r2.Err, len(r2.Events))
		}
		return
	}
	if sid == "" {
		t.Fatal("run 1 reported no session id")
	}
	checkResumed(t, h.Run, sid, func() []string { return providertest.Transcripts(h.fake.ChatRequests()) })
}

func testBogusSession(t *testing.T, c familyCLI) {
	// gemini is never resumed (see acp.Gemini); load anyway to check how
	// its real "no such session" error maps.
	c.def.Resume = true
	h := setup(t, c)
	if h == nil {
		return
	}
	bogus := "00000000-0000-0000-0000-000000000000"
	if c.def.ID == "opencode" {
		bogus = "ses_doesnotexist000000000000"
	}
	providertest.CheckUnknownSession(t, h.Run, agent.RunRequest{}, bogus, func() int { return len(h.fake.ChatRequests()) })
}

// testFlagModel: a model that reads as a flag ("--auto") is refused before
// the CLI starts, whatever bypassed the chat's check; the next run (the
// agent's default model) still asks before the bash tool runs.
func testFlagModel(t *testing.T, c familyCLI) {
	h := setup(t, c, fakeopenai.When("e2e-flag", fakeopenai.Shell("echo flag > asked.txt")))
	if h == nil {
		return
	}
	responses := make(chan agent.InteractionResponse, 4)
	r := h.Run(agent.RunRequest{Prompt: "e2e-flag: run it", Model: "--auto", Approval: agent.ApprovalAsk, Responses: responses}, nil)
	if !errors.Is(r.Err, agent.ErrInvalidArgValue) || len(r.Events) != 0 {
		t.Fatalf("Run(model --auto) = %v, %d events; want ErrInvalidArgValue and none", r.Err, len(r.Events))
	}
	if n := len(h.fake.ChatRequests()); n != 0 {
		t.Fatalf("the refused run reached the model: %d requests", n)
	}
	r = h.Run(agent.RunRequest{Prompt: "e2e-flag: run it", Approval: agent.ApprovalAsk, Responses: responses},
		providertest.Answer(responses, providertest.Always(agent.DecisionDecline, nil)))
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
	if req := r.Of(agent.EventInteractionRequested); len(req) != 1 || req[0].Interaction.Kind != agent.KindCommandApproval {
		t.Fatalf("the bash tool did not ask: %+v", req)
	}
	if h.Exists("asked.txt") {
		t.Errorf("the declined tool ran")
	}
}

// TestE2EAsOrdinaryUser: every real ACP CLI of TestE2E runs an approved
// shell tool sandboxed as an ordinary user (no uid switch: the runs start
// as that user itself), as root's TestE2E runs them as the agent user.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^TestE2E$/.+/^allow$")
}
