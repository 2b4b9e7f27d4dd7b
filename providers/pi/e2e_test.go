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
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/pi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

type e2e struct {
	t    *testing.T
	fake *fakeopenai.Server
	prov *pi.Provider
	cwd  string
}

func setup(t *testing.T, scripts ...fakeopenai.Script) *e2e {
	t.Helper()
	bin := providertest.FindCLI(t, "pi", "THREADLINE_PI_BIN")
	if !providertest.InNetns(t) {
		return nil
	}
	fake := fakeopenai.New(t, scripts...)
	env, err := pi.Configure(t.TempDir(), fake.URL()+"/v1", "sk-fake", fakeopenai.DefaultModel)
	if err != nil {
		t.Fatal(err)
	}
	env["HTTP_PROXY"], env["HTTPS_PROXY"] = "http://127.0.0.1:9", "http://127.0.0.1:9"
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	return &e2e{
		t:    t,
		fake: fake,
		prov: pi.New(logger, pi.Options{Launch: procrun.Launch{Bin: bin, Env: env, StopGrace: 5 * time.Second}}),
		cwd:  t.TempDir(),
	}
}

// run executes one turn in the harness's cwd (unless req sets one).
func (h *e2e) run(req agent.RunRequest, onEvent providertest.OnEvent) *providertest.Result {
	h.t.Helper()
	if req.Cwd == "" {
		req.Cwd = h.cwd
	}
	return providertest.Run(h.t, h.prov, req, onEvent)
}

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
	r := h.run(agent.RunRequest{Prompt: "e2e-tool: write the marker", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
	started, completed := r.Of(agent.EventToolStarted), r.Of(agent.EventToolCompleted)
	if len(started) != 1 || started[0].Tool.Name != "bash" || len(completed) != 1 || completed[0].Tool.IsError ||
		!strings.Contains(completed[0].Tool.Output, "e2e-tool-ok") {
		t.Fatalf("tool.started %+v, tool.completed %+v", started, completed)
	}
	if b, err := os.ReadFile(filepath.Join(h.cwd, "marker.txt")); err != nil || strings.TrimSpace(string(b)) != "e2e-tool-ok" {
		t.Errorf("marker.txt in cwd: %q, %v", b, err)
	}
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
	r := h.run(agent.RunRequest{Prompt: "e2e-ro: try bash", Approval: agent.ApprovalDeny}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted || r.Events[0].Subtype != "read_only_tools" {
		t.Fatalf("Run = %v, events %+v", r.Err, r.Events)
	}
	reqs := h.fake.ChatRequests()
	if len(reqs) != 1 || strings.Join(reqs[0].ToolNames(), ",") != "read,grep,find,ls" {
		t.Errorf("tools offered:\n%s", transcripts(h.fake))
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "nope.txt")); err == nil {
		t.Error("a command ran under the deny policy")
	}
}

func TestE2EAbort(t *testing.T) {
	h := setup(t, fakeopenai.When("e2e-slow", fakeopenai.Slow(300, 100*time.Millisecond)))
	if h == nil {
		return
	}
	r := providertest.CheckCancelMidStream(t, h.run, "word299", 8*time.Second)
	if last := r.Last(); last.Text != "Request was aborted" {
		t.Errorf("pi did not end the run as aborted in time (%q): killed instead", last.Text)
	}
}

func TestE2EResume(t *testing.T) {
	h := setup(t,
		fakeopenai.When("e2e-remember", fakeopenai.Text("Noted: ", "the word is ", "alpha.")),
		fakeopenai.When("e2e-recall", fakeopenai.Text("The word ", "was alpha.")),
	)
	if h == nil {
		return
	}
	r1 := h.run(agent.RunRequest{Prompt: "e2e-remember the word alpha", Approval: agent.ApprovalAccept}, nil)
	if r1.Err != nil {
		t.Fatalf("run 1: %v", r1.Err)
	}
	sid := r1.SessionID()
	if sid == "" {
		t.Fatal("run 1 reported no session")
	}
	// Resume from another directory: the session file works from anywhere.
	r2 := h.run(agent.RunRequest{Prompt: "e2e-recall the word", ResumeID: sid, Approval: agent.ApprovalAccept, Cwd: t.TempDir()}, nil)
	if r2.Err != nil || r2.Last().Type != agent.EventRunCompleted || r2.Text() != "The word was alpha." {
		t.Fatalf("run 2 = %v, last %+v, text %q", r2.Err, r2.Last(), r2.Text())
	}
	if n := len(r2.Of(agent.EventSessionUpdated)); n != 0 {
		t.Errorf("run 2 moved to another session")
	}
	reqs := h.fake.ChatRequests()
	tr := reqs[len(reqs)-1].Transcript()
	for _, want := range []string{"e2e-remember the word alpha", "Noted: the word is alpha.", "e2e-recall the word"} {
		if !strings.Contains(tr, want) {
			t.Errorf("resumed request lacks %q:\n%s", want, transcripts(h.fake))
		}
	}
	// A fork starts a new session file with the same history.
	r3 := h.run(agent.RunRequest{Prompt: "e2e-recall again", ResumeID: sid, Fork: true, Approval: agent.ApprovalAccept}, nil)
	if r3.Err != nil || r3.SessionID() == "" || r3.SessionID() == sid {
		t.Fatalf("fork = %v, session %q (was %q)", r3.Err, r3.SessionID(), sid)
	}
	reqs = h.fake.ChatRequests()
	if tr := reqs[len(reqs)-1].Transcript(); !strings.Contains(tr, "e2e-remember the word alpha") {
		t.Errorf("forked request lacks the history:\n%s", tr)
	}
}

func TestE2EBogusSession(t *testing.T) {
	h := setup(t)
	if h == nil {
		return
	}
	for _, id := range []string{"00000000-dead-beef-0000-000000000000", filepath.Join(h.cwd, "gone.jsonl")} {
		r := h.run(agent.RunRequest{Prompt: "e2e-stale", ResumeID: id, Approval: agent.ApprovalAccept}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) {
			t.Fatalf("Run(%s) = %v, want ErrSessionNotFound", id, r.Err)
		}
		if n := len(r.Of(agent.EventRunFailed)); n != 0 {
			t.Errorf("%d run.failed for a stale session", n)
		}
	}
	if n := len(h.fake.ChatRequests()); n != 0 {
		t.Errorf("fake saw %d requests", n)
	}
}
