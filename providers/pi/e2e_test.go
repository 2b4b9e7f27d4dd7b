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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/pi"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

const runTimeout = 30 * time.Second

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
		prov: pi.New(logger, pi.Options{Bin: bin, Env: env, InterruptTimeout: 5 * time.Second}),
		cwd:  t.TempDir(),
	}
}

type runResult struct {
	events  []agent.Event
	err     error
	elapsed time.Duration
}

func (r *runResult) of(typ agent.EventType) []agent.Event {
	var out []agent.Event
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func (r *runResult) last() agent.Event {
	if len(r.events) == 0 {
		return agent.Event{}
	}
	return r.events[len(r.events)-1]
}

func (r *runResult) text() string {
	var sb strings.Builder
	for _, ev := range r.of(agent.EventAssistantDelta) {
		sb.WriteString(ev.Text)
	}
	return sb.String()
}

func (r *runResult) sessionID() string {
	for _, ev := range r.of(agent.EventSessionUpdated) {
		return ev.SessionID
	}
	return ""
}

func (h *e2e) run(req agent.RunRequest, onEvent func(ev agent.Event, cancel context.CancelFunc)) *runResult {
	h.t.Helper()
	if req.Cwd == "" {
		req.Cwd = h.cwd
	}
	req.ChatID, req.RunID = "chat-e2e", "run-"+h.t.Name()
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	res := &runResult{}
	done := false
	start := time.Now()
	res.err = h.prov.Run(ctx, req, func(ev agent.Event) {
		if done {
			h.t.Errorf("event %s emitted after Run returned", ev.Type)
		}
		res.events = append(res.events, ev)
		if onEvent != nil {
			onEvent(ev, cancel)
		}
	})
	done = true
	res.elapsed = time.Since(start)
	var types []string
	for _, ev := range res.events {
		types = append(types, string(ev.Type))
	}
	h.t.Logf("Run(%q) = %v in %s; events: %s", req.Prompt, res.err, res.elapsed.Round(time.Millisecond), strings.Join(types, " "))
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		h.t.Fatalf("Run hit the %s timeout", runTimeout)
	}
	terminals := 0
	for i, ev := range res.events {
		if ev.Type.Terminal() {
			terminals++
			if i != len(res.events)-1 {
				h.t.Errorf("terminal %s at %d of %d events", ev.Type, i, len(res.events))
			}
		}
	}
	if terminals > 1 {
		h.t.Errorf("%d terminal events", terminals)
	}
	return res
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
	if r.err != nil || r.last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.err, r.last())
	}
	started, completed := r.of(agent.EventToolStarted), r.of(agent.EventToolCompleted)
	if len(started) != 1 || started[0].Tool.Name != "bash" || len(completed) != 1 || completed[0].Tool.IsError ||
		!strings.Contains(completed[0].Tool.Output, "e2e-tool-ok") {
		t.Fatalf("tool.started %+v, tool.completed %+v", started, completed)
	}
	if b, err := os.ReadFile(filepath.Join(h.cwd, "marker.txt")); err != nil || strings.TrimSpace(string(b)) != "e2e-tool-ok" {
		t.Errorf("marker.txt in cwd: %q, %v", b, err)
	}
	if !strings.Contains(r.last().Text, "Tool result: e2e-tool-ok") {
		t.Errorf("final answer %q", r.last().Text)
	}
	if sid := r.sessionID(); !strings.HasSuffix(sid, ".jsonl") {
		t.Errorf("session id %q, want the session file", sid)
	}
	if u := r.of(agent.EventUsageUpdated); len(u) != 1 || u[0].Usage.InputTokens == 0 {
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
	if r.err != nil || r.last().Type != agent.EventRunCompleted || r.events[0].Subtype != "read_only_tools" {
		t.Fatalf("Run = %v, events %+v", r.err, r.events)
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
	var cancelledAt time.Time
	r := h.run(agent.RunRequest{Prompt: "e2e-slow: count slowly", Approval: agent.ApprovalAccept}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && cancelledAt.IsZero() && strings.Contains(ev.Text, "slow-02") {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if cancelledAt.IsZero() {
		t.Fatalf("never saw the third delta; err %v", r.err)
	}
	if r.err != nil || r.last().Type != agent.EventRunInterrupted {
		t.Fatalf("Run = %v, last %+v", r.err, r.last())
	}
	took := time.Since(cancelledAt)
	t.Logf("cancel → Run returned in %s (%s)", took.Round(time.Millisecond), r.last().Text)
	if r.last().Text != "Request was aborted" {
		t.Errorf("pi did not end the run as aborted in time (%q): killed instead", r.last().Text)
	}
	if took > 8*time.Second || strings.Contains(r.text(), "slow-299") {
		t.Errorf("Run returned %s after cancel", took)
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
	if r1.err != nil {
		t.Fatalf("run 1: %v", r1.err)
	}
	sid := r1.sessionID()
	if sid == "" {
		t.Fatal("run 1 reported no session")
	}
	// Resume from another directory: the session file works from anywhere.
	r2 := h.run(agent.RunRequest{Prompt: "e2e-recall the word", ResumeID: sid, Approval: agent.ApprovalAccept, Cwd: t.TempDir()}, nil)
	if r2.err != nil || r2.last().Type != agent.EventRunCompleted || r2.text() != "The word was alpha." {
		t.Fatalf("run 2 = %v, last %+v, text %q", r2.err, r2.last(), r2.text())
	}
	if n := len(r2.of(agent.EventSessionUpdated)); n != 0 {
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
	if r3.err != nil || r3.sessionID() == "" || r3.sessionID() == sid {
		t.Fatalf("fork = %v, session %q (was %q)", r3.err, r3.sessionID(), sid)
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
		if !errors.Is(r.err, agent.ErrSessionNotFound) {
			t.Fatalf("Run(%s) = %v, want ErrSessionNotFound", id, r.err)
		}
		if n := len(r.of(agent.EventRunFailed)); n != 0 {
			t.Errorf("%d run.failed for a stale session", n)
		}
	}
	if n := len(h.fake.ChatRequests()); n != 0 {
		t.Errorf("fake saw %d requests", n)
	}
}
