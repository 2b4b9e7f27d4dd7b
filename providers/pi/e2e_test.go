// End-to-end tests: the provider drives the real pi (pinned in
// package.json) against the scripted Chat Completions fake of
// providertest/fakeopenai, inside a network namespace where only loopback is
// up.
//
//	sudo THREADLINE_E2E=1 go test -run 'TestE2E' -v ./providers/pi/
//
// Without pi, or without the rights to create a network namespace, the tests
// skip; THREADLINE_E2E=1 turns those skips into failures.

package pi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/pi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

type harness = providertest.Harness[*fakeopenai.Server, *pi.Provider]

// setup sets a test up (nil in the outer test process, see
// providertest.Setup): pi configured for the fake answering with the test's
// scripts, its processes marked.
var setup = providertest.NewSetup(providertest.CLI{Name: "pi", EnvVar: "THREADLINE_PI_BIN"}, fakeopenai.New, func(h *harness) *pi.Provider {
	env, err := pi.Configure(h.T.TempDir(), h.Fake.URL()+"/v1", "sk-fake", fakeopenai.DefaultModel)
	if err != nil {
		h.T.Fatal(err)
	}
	providertest.DeadProxy(env)
	return pi.New(providertest.Logger(h.T), pi.Options{Launch: h.Launch(env, 5*time.Second)})
})

func transcripts(fake *fakeopenai.Server) string {
	var sb strings.Builder
	for i, r := range fake.ChatRequests() {
		fmt.Fprintf(&sb, "--- request %d (tools %v)\n%s", i+1, r.ToolNames(), r.Transcript())
	}
	return sb.String()
}

func TestE2ETool(t *testing.T) {
	h := setup(t, fakeopenai.When("e2e-tool", fakeopenai.Shell("echo e2e-tool-ok > marker.txt && cat marker.txt")))
	if h == nil {
		return
	}
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-tool: write the marker", Approval: agent.ApprovalAccept}, nil)
	started, completed := r.Of(agent.EventToolStarted), r.Of(agent.EventToolCompleted)
	if len(started) != 1 || started[0].Tool.Name != "bash" || len(completed) != 1 || completed[0].Tool.IsError ||
		!strings.Contains(completed[0].Tool.Output, "e2e-tool-ok") {
		t.Fatalf("tool.started %+v, tool.completed %+v", started, completed)
	}
	h.CheckFile("marker.txt", "e2e-tool-ok")
	if !strings.Contains(r.Last().Text, "Tool result: e2e-tool-ok") {
		t.Errorf("final answer %q", r.Last().Text)
	}
	if sid := r.SessionID(); !strings.HasSuffix(sid, ".jsonl") {
		t.Errorf("session id %q, want the session file", sid)
	}
	if u := r.Of(agent.EventUsageUpdated); len(u) != 1 || u[0].Usage.InputTokens == 0 {
		t.Errorf("usage %+v", u)
	}
}

// TestE2EReadOnly: without accept, pi gets only the read-only tools, so the
// model is never offered bash.
func TestE2EReadOnly(t *testing.T) {
	h := setup(t, fakeopenai.When("e2e-ro", fakeopenai.Shell("echo nope > nope.txt")))
	if h == nil {
		return
	}
	r := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: "e2e-ro: try bash", Approval: agent.ApprovalDeny}, nil)
	if r.Events[0].Subtype != "read_only_tools" {
		t.Fatalf("events %+v", r.Events)
	}
	reqs := h.Fake.ChatRequests()
	if len(reqs) != 1 || strings.Join(reqs[0].ToolNames(), ",") != "read,grep,find,ls" {
		t.Errorf("tools offered:\n%s", transcripts(h.Fake))
	}
	if h.Exists("nope.txt") {
		t.Error("a command ran under the deny policy")
	}
}

func TestE2EAbort(t *testing.T) {
	providertest.CancelMidStream(t, setup, fakeopenai.When, fakeopenai.Slow, 8*time.Second, "Request was aborted")
}

func TestE2EResume(t *testing.T) {
	h := setup(t, providertest.ResumeScripts(fakeopenai.When, fakeopenai.Text)...)
	if h == nil {
		return
	}
	r1 := h.Run(agent.RunRequest{Prompt: providertest.RememberPrompt, Approval: agent.ApprovalAccept}, nil)
	if r1.Err != nil {
		t.Fatalf("run 1: %v", r1.Err)
	}
	sid := r1.SessionID()
	if sid == "" {
		t.Fatal("run 1 reported no session")
	}
	// Resume from another directory: the session file works from anywhere.
	r2 := h.Ends(agent.EventRunCompleted, agent.RunRequest{Prompt: providertest.RecallPrompt, ResumeID: sid, Approval: agent.ApprovalAccept, Cwd: t.TempDir()}, nil)
	if r2.Text() != providertest.RecallText {
		t.Fatalf("run 2 text %q", r2.Text())
	}
	if n := len(r2.Of(agent.EventSessionUpdated)); n != 0 {
		t.Errorf("run 2 moved to another session")
	}
	tr := providertest.LastTranscript(h.Fake)()
	for _, want := range []string{providertest.RememberPrompt, providertest.RememberText, providertest.RecallPrompt} {
		if !strings.Contains(tr, want) {
			t.Errorf("resumed request lacks %q:\n%s", want, transcripts(h.Fake))
		}
	}
	// A fork starts a new session file with the same history.
	r3 := h.Run(agent.RunRequest{Prompt: providertest.RecallPrompt, ResumeID: sid, Fork: true, Approval: agent.ApprovalAccept}, nil)
	if r3.Err != nil || r3.SessionID() == "" || r3.SessionID() == sid {
		t.Fatalf("fork = %v, session %q (was %q)", r3.Err, r3.SessionID(), sid)
	}
	if tr := providertest.LastTranscript(h.Fake)(); !strings.Contains(tr, providertest.RememberPrompt) {
		t.Errorf("forked request lacks the history:\n%s", tr)
	}
}

func TestE2EBogusSession(t *testing.T) {
	h := setup(t)
	if h == nil {
		return
	}
	for _, id := range []string{"00000000-dead-beef-0000-000000000000", h.Path("gone.jsonl")} {
		providertest.CheckUnknownSession(t, h.Run, agent.RunRequest{Approval: agent.ApprovalAccept}, id,
			func() int { return len(h.Fake.ChatRequests()) })
	}
}

// TestE2EAsOrdinaryUser: the real pi runs a tool sandboxed as an ordinary
// user (no uid switch: the runs start as that user itself), as root's
// tests above run it as the agent user.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^TestE2ETool$")
}
