// Provider tests: the test binary re-executed as a scripted fake pi
// (PI_FAKE=1); the prompt text picks the behaviour.

package pi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/providertest"
)

const (
	envFake   = "PI_FAKE"        // "1" turns the test binary into the fake pi
	envRecord = "PI_FAKE_RECORD" // argv and every stdin line are appended here
	envFile   = "PI_FAKE_FILE"   // the session file get_state reports
)

func TestMain(m *testing.M) {
	providertest.RunSandboxIfAsked() // before the fakes: the helper passes their variables on
	if os.Getenv(envFake) == "1" {
		os.Exit(providertest.ServeFake("0.73.1", os.Getenv(envRecord), fakePi))
	}
	providertest.Main(m)
}

func assistant(text, stop, errMsg string) map[string]any {
	m := map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}, "stopReason": stop,
		"provider": "fake", "model": "fake-model",
		"usage": map[string]any{"input": 10, "output": 5, "cacheRead": 1, "cacheWrite": 0, "cost": map[string]any{"total": 0.5}}}
	if errMsg != "" {
		m["errorMessage"] = errMsg
	}
	return m
}

// fakePi serves pi's RPC mode on stdin/stdout (see ServeFake), keeping
// every line it reads in rec.
func fakePi(rec *os.File) int {
	file := os.Getenv(envFile)
	if i := slices.Index(os.Args, "--session"); i > 0 && i+1 < len(os.Args) {
		s := os.Args[i+1]
		if s == "bogus" {
			fmt.Fprintf(os.Stderr, "No session found matching '%s'\n", s)
			return 1
		}
		file = s
	}
	out := providertest.NewLineWriter()
	abort := make(chan struct{}, 1)
	dialog := make(chan json.RawMessage, 1)
	var wg sync.WaitGroup
	code := 0
	providertest.RecordLines(rec, func(line []byte) bool {
		var cmd struct {
			Type    string `json:"type"`
			ID      string `json:"id"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(line, &cmd)
		switch cmd.Type {
		case "get_state":
			out.Send(map[string]any{"id": cmd.ID, "type": "response", "command": "get_state", "success": true,
				"data": map[string]any{"sessionId": "sid-1", "sessionFile": file, "model": map[string]any{"id": "fake-model", "provider": "fake"}}})
		case "prompt":
			if cmd.Message == "refuse" {
				out.Send(map[string]any{"id": cmd.ID, "type": "response", "command": "prompt", "success": false, "error": "Agent is already processing."})
				return true
			}
			if cmd.Message == "crash" {
				fmt.Fprintln(os.Stderr, "pi: fatal error in the fake")
				code = 2
				return false
			}
			out.Send(map[string]any{"id": cmd.ID, "type": "response", "command": "prompt", "success": true})
			wg.Add(1)
			go func() {
				defer wg.Done()
				fakeRun(out, cmd.Message, abort, dialog)
			}()
		case "abort":
			select {
			case abort <- struct{}{}:
			default:
			}
		case "extension_ui_response":
			dialog <- line
		}
		return true
	})
	if code != 0 {
		return code
	}
	wg.Wait()
	return 0
}

func fakeRun(out *providertest.LineWriter, prompt string, abort chan struct{}, dialog chan json.RawMessage) {
	delta := func(kind, d string) {
		out.Send(map[string]any{"type": "message_update", "assistantMessageEvent": map[string]any{"type": kind, "delta": d, "partial": map[string]any{}}})
	}
	end := func(msgs ...map[string]any) {
		out.Send(map[string]any{"type": "agent_end", "messages": msgs})
	}
	out.Send(map[string]any{"type": "agent_start"})
	out.Send(map[string]any{"type": "message_start", "message": map[string]any{"role": "assistant", "content": []any{}}})
	switch prompt {
	case "text":
		delta("thinking_delta", "hmm")
		delta("text_start", "")
		delta("text_delta", "Hel")
		delta("text_delta", "lo")
		out.Send(map[string]any{"type": "message_update", "assistantMessageEvent": map[string]any{"type": "brand_new"}})
		a := assistant("Hello", "stop", "")
		out.Send(map[string]any{"type": "message_end", "message": a})
		out.Send(map[string]any{"type": "queue_update", "steering": []any{}, "followUp": []any{}})
		end(a)
	case "tool":
		out.Send(map[string]any{"type": "tool_execution_start", "toolCallId": "c1", "toolName": "bash", "args": map[string]any{"command": "ls -la"}})
		for _, s := range []string{"a", "ab"} {
			out.Send(map[string]any{"type": "tool_execution_update", "toolCallId": "c1", "toolName": "bash", "partialResult": map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}})
		}
		out.Send(map[string]any{"type": "tool_execution_end", "toolCallId": "c1", "toolName": "bash", "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": "ab"}}}, "isError": true})
		a := assistant("done", "stop", "")
		out.Send(map[string]any{"type": "message_end", "message": a}) // no deltas: the text comes from here
		end(a)
	case "retry-ok", "retry-fail":
		bad := assistant("", "error", "500 fake upstream failure")
		out.Send(map[string]any{"type": "message_end", "message": bad})
		end(bad)
		out.Send(map[string]any{"type": "auto_retry_start", "attempt": 1, "maxAttempts": 2, "delayMs": 50, "errorMessage": "500 fake upstream failure"})
		time.Sleep(50 * time.Millisecond)
		out.Send(map[string]any{"type": "agent_start"})
		if prompt == "retry-fail" {
			end(bad)
			out.Send(map[string]any{"type": "auto_retry_end", "success": false, "attempt": 2, "finalError": "500 fake upstream failure"})
			return
		}
		delta("text_delta", "recovered")
		a := assistant("recovered", "stop", "")
		out.Send(map[string]any{"type": "message_end", "message": a})
		end(a)
		out.Send(map[string]any{"type": "auto_retry_end", "success": true, "attempt": 2})
	case "error":
		bad := assistant("", "error", "400 bad request")
		out.Send(map[string]any{"type": "message_end", "message": bad})
		end(bad)
	case "length":
		end(assistant("cut", "length", ""))
	case "slow", "hang":
		if prompt == "hang" {
			providertest.IgnoreStop()
		}
		for i := range 500 {
			delta("text_delta", fmt.Sprintf("w%03d ", i))
			select {
			case <-abort:
				if prompt == "slow" {
					a := assistant("partial", "aborted", "Request was aborted")
					out.Send(map[string]any{"type": "message_end", "message": a})
					end(a)
					out.Send(map[string]any{"id": "threadline-abort", "type": "response", "command": "abort", "success": true})
					return
				}
			case <-time.After(20 * time.Millisecond):
			}
		}
	case "confirm":
		out.Send(map[string]any{"type": "extension_ui_request", "id": "d1", "method": "confirm", "title": "Allow rm?", "message": "It deletes files."})
		out.Send(map[string]any{"type": "extension_ui_request", "id": "n1", "method": "notify", "message": "fyi"})
		ans := <-dialog
		a := assistant("answer: "+string(bytes.TrimSpace(ans)), "stop", "")
		out.Send(map[string]any{"type": "message_end", "message": a})
		end(a)
	}
}

type harness struct {
	t      *testing.T
	prov   *Provider
	record string
	cwd    string
	file   string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fake := providertest.SelfFake(t, envRecord, map[string]string{envFake: "1", envFile: file})
	prov := New(providertest.Logger(t), Options{
		Launch:     procrun.Launch{Bin: fake.Bin, Env: fake.Env, HostEnv: func() []string { return nil }, StopGrace: 2 * time.Second},
		RetryGrace: 200 * time.Millisecond,
	})
	return &harness{t: t, prov: prov, record: fake.Record, cwd: t.TempDir(), file: file}
}

func (h *harness) run(req agent.RunRequest, onEvent providertest.OnEvent) *providertest.Result {
	h.t.Helper()
	if req.Cwd == "" {
		req.Cwd = h.cwd
	}
	return providertest.Run(h.t, h.prov, req, onEvent)
}

// recorded returns the fake's argv and the client's stdin lines.
func (h *harness) recorded() (argv []string, lines []string) {
	h.t.Helper()
	r := providertest.ReadRecord(h.t, h.record)
	for _, l := range r.Stdin {
		lines = append(lines, string(l))
	}
	return r.Argv, lines
}

func TestRunText(t *testing.T) {
	h := newHarness(t)
	r := h.run(agent.RunRequest{Prompt: "text", Approval: agent.ApprovalAccept, Model: "fake/fake-model", Effort: "high"}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	want := "session.updated reasoning.delta assistant.delta assistant.delta provider.native provider.native usage.updated run.completed"
	if got := strings.Trim(fmt.Sprint(r.Types()), "[]"); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	if ev := r.Events[0]; ev.SessionID != h.file || ev.Model != "fake/fake-model" {
		t.Errorf("session.updated %+v", ev)
	}
	if u := r.Of(agent.EventUsageUpdated)[0].Usage; u.InputTokens != 10 || u.OutputTokens != 5 || u.CacheReadTokens != 1 || u.CostUSD != 0.5 {
		t.Errorf("usage %+v", u)
	}
	if r.Last().Text != "Hello" {
		t.Errorf("final %q", r.Last().Text)
	}
	argv, lines := h.recorded()
	if !slices.Equal(argv, []string{"--mode", "rpc", "--model", "fake/fake-model", "--thinking", "high"}) {
		t.Errorf("argv %q", argv)
	}
	if len(lines) != 2 || lines[0] != `{"type":"get_state","id":"threadline-state"}` || lines[1] != `{"type":"prompt","id":"threadline-prompt","message":"text"}` {
		t.Errorf("stdin %q", lines)
	}
}

func TestRunReadOnlyUnlessAccept(t *testing.T) {
	for _, req := range []agent.RunRequest{{Approval: agent.ApprovalDeny}, {Approval: agent.ApprovalAsk, Responses: make(chan agent.InteractionResponse)}, {Approval: agent.ApprovalAccept, Mode: agent.ModePlan}} {
		h := newHarness(t)
		req.Prompt = "text"
		r := h.run(req, nil)
		if r.Err != nil || r.Events[0].Subtype != "read_only_tools" {
			t.Fatalf("%+v: Run = %v, events %s", req, r.Err, r.Types())
		}
		argv, _ := h.recorded()
		if !slices.Equal(argv, []string{"--mode", "rpc", "--tools", "read,grep,find,ls"}) {
			t.Errorf("%+v: argv %q", req, argv)
		}
	}
}

func TestRunTool(t *testing.T) {
	h := newHarness(t)
	r := h.run(agent.RunRequest{Prompt: "tool", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	st := r.Of(agent.EventToolStarted)
	if len(st) != 1 || st[0].Tool.Summary != "bash: ls -la" || string(st[0].Tool.Input) != `{"command":"ls -la"}` {
		t.Fatalf("tool.started %+v", st)
	}
	if outs := r.Texts(agent.EventToolOutput); !slices.Equal(outs, []string{"a", "b"}) {
		t.Errorf("tool.output %q", outs)
	}
	if c := r.Of(agent.EventToolCompleted); len(c) != 1 || c[0].Tool.Output != "ab" || !c[0].Tool.IsError {
		t.Errorf("tool.completed %+v", c)
	}
	if d := r.Of(agent.EventAssistantDelta); len(d) != 1 || d[0].Text != "done" {
		t.Errorf("unstreamed text %+v", d)
	}
}

func TestRunRetry(t *testing.T) {
	t.Run("recovers", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "retry-ok", Approval: agent.ApprovalAccept}, nil)
		if r.Err != nil || r.Last().Type != agent.EventRunCompleted || r.Last().Text != "recovered" {
			t.Fatalf("Run = %v, events %s", r.Err, r.Types())
		}
		if sys := r.Of(agent.EventSystem); len(sys) != 1 || sys[0].Subtype != "api_retry" || !strings.Contains(sys[0].Text, "attempt 1 of 2") {
			t.Errorf("system %+v", sys)
		}
	})
	t.Run("gives up", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "retry-fail", Approval: agent.ApprovalAccept}, nil)
		if last := providertest.CheckFailed(t, r, ""); last.Text != "500 fake upstream failure" {
			t.Fatalf("last %+v", last)
		}
	})
	t.Run("no retry follows", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "error", Approval: agent.ApprovalAccept}, nil)
		if last := providertest.CheckFailed(t, r, ""); last.Text != "400 bad request" {
			t.Fatalf("last %+v", last)
		}
		if r.Elapsed < 200*time.Millisecond {
			t.Errorf("ended after %s, before the retry window", r.Elapsed)
		}
	})
}

func TestRunFailures(t *testing.T) {
	for prompt, want := range map[string]string{
		"refuse": "pi refused the prompt: Agent is already processing.",
		"length": "output token limit",
		"crash":  "pi: fatal error in the fake",
	} {
		t.Run(prompt, func(t *testing.T) {
			h := newHarness(t)
			r := h.run(agent.RunRequest{Prompt: prompt, Approval: agent.ApprovalAccept}, nil)
			providertest.CheckFailed(t, r, want)
		})
	}
}

func TestRunAbort(t *testing.T) {
	h := newHarness(t)
	var at time.Time
	r := h.run(agent.RunRequest{Prompt: "slow", Approval: agent.ApprovalAccept}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && ev.Text == "w002 " {
			at = time.Now()
			cancel()
		}
	})
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted || r.Last().Text != "Request was aborted" {
		t.Fatalf("Run = %v, events %s", r.Err, r.Types())
	}
	if d := time.Since(at); d > time.Second {
		t.Errorf("returned %s after cancel", d)
	}
	if _, lines := h.recorded(); !slices.Contains(lines, `{"type":"abort","id":"threadline-abort"}`) {
		t.Errorf("no abort sent: %q", lines)
	}
}

func TestRunAbortKillsAfterDeadline(t *testing.T) {
	h := newHarness(t)
	h.prov.opts.StopGrace = 300 * time.Millisecond
	var at time.Time
	r := h.run(agent.RunRequest{Prompt: "hang", Approval: agent.ApprovalAccept}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && at.IsZero() {
			at = time.Now()
			cancel()
		}
	})
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("Run = %v, events %s", r.Err, r.Types())
	}
	if d := time.Since(at); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("returned %s after cancel", d)
	}
}

func TestRunDialogs(t *testing.T) {
	t.Run("asked", func(t *testing.T) {
		h := newHarness(t)
		responses := make(chan agent.InteractionResponse, 1)
		r := h.run(agent.RunRequest{Prompt: "confirm", Responses: responses}, providertest.Answer(responses, providertest.Decide(agent.DecisionApprove, nil, "alice")))
		if r.Err != nil {
			t.Fatalf("Run: %v", r.Err)
		}
		in := r.Of(agent.EventInteractionRequested)[0].Interaction
		if in.ID != "d1" || string(in.NativeID) != `"d1"` || in.Kind != agent.KindPermission || in.Title != "Allow rm?" || in.Reason != "It deletes files." {
			t.Errorf("interaction %+v", in)
		}
		if res := r.Of(agent.EventInteractionResolved)[0].Resolution; res.Status != agent.StatusApproved || res.By != "alice" {
			t.Errorf("resolution %+v", res)
		}
		if r.Last().Text != `answer: {"confirmed":true,"id":"d1","type":"extension_ui_response"}` {
			t.Errorf("pi got %q", r.Last().Text)
		}
	})
	t.Run("policy", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "confirm", Approval: agent.ApprovalDeny}, nil)
		if r.Err != nil || !strings.Contains(r.Last().Text, `"confirmed":false`) {
			t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
		}
		if res := r.Of(agent.EventInteractionResolved)[0].Resolution; res.By != "policy" || res.Status != agent.StatusDeclined {
			t.Errorf("resolution %+v", res)
		}
	})
}

func TestRunSessions(t *testing.T) {
	t.Run("resume by file", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "text", ResumeID: h.file, Approval: agent.ApprovalAccept}, nil)
		if r.Err != nil || len(r.Of(agent.EventSessionUpdated)) != 0 {
			t.Fatalf("Run = %v, events %s", r.Err, r.Types())
		}
		if argv, _ := h.recorded(); !slices.Equal(argv[:4], []string{"--mode", "rpc", "--session", h.file}) {
			t.Errorf("argv %q", argv)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "text", ResumeID: filepath.Join(h.cwd, "gone.jsonl")}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) || len(r.Events) != 0 {
			t.Fatalf("Run = %v, events %s", r.Err, r.Types())
		}
	})
	t.Run("unknown id", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "text", ResumeID: "bogus"}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) || len(r.Of(agent.EventRunFailed)) != 0 || r.Last().Subtype != "session_not_found" {
			t.Fatalf("Run = %v, events %s", r.Err, r.Types())
		}
	})
	t.Run("fork", func(t *testing.T) {
		h := newHarness(t)
		r := h.run(agent.RunRequest{Prompt: "text", ResumeID: h.file, Fork: true, Approval: agent.ApprovalAccept}, nil)
		if r.Err != nil || len(r.Of(agent.EventSessionUpdated)) != 1 {
			t.Fatalf("Run = %v, events %s", r.Err, r.Types())
		}
		if argv, _ := h.recorded(); !slices.Equal(argv[:4], []string{"--mode", "rpc", "--fork", h.file}) {
			t.Errorf("argv %q", argv)
		}
	})
}

func TestRunImages(t *testing.T) {
	line, err := PromptLine(agent.RunRequest{Prompt: "see", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}}, "p")
	if err != nil || string(line) != `{"type":"prompt","id":"p","message":"see","images":[{"type":"image","data":"AQID","mimeType":"image/png"}]}` {
		t.Fatalf("%s %v", line, err)
	}
	if _, err := PromptLine(agent.RunRequest{Images: []agent.Image{{Name: "x"}}}, "p"); err == nil {
		t.Error("empty image accepted")
	}
}

func TestDescriptor(t *testing.T) {
	d := Descriptor()
	if d.ID != string(ProviderID) || d.Executable != DefaultBin || d.InstallHint != installHint || !slices.Equal(d.Efforts, Efforts) || d.Resume != "cli-flag" || !d.NativeFork {
		t.Fatalf("descriptor %+v", d)
	}
	providertest.CheckDescriptor(t, d, registry.VerifiedRealCLI)
	providertest.CheckDescribedArgs(t, d, func(req agent.RunRequest) ([]string, error) { return Args(req), nil })
	if fork := Args(agent.RunRequest{ResumeID: "s1", Fork: true}); !providertest.ContainsRun(fork, []string{d.Args.Fork, "s1"}) || slices.Contains(fork, d.Args.Resume) {
		t.Errorf("fork args %q", fork)
	}
	providertest.CheckNotInstalled(t, func(bin string) *Provider { return New(nil, Options{Launch: procrun.Launch{Bin: bin}}) }, installHint)
}

func TestRunCancelBeforeStart(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var evs []agent.Event
	err := h.prov.Run(ctx, agent.RunRequest{Prompt: "text"}, func(ev agent.Event) { evs = append(evs, ev) })
	if err != nil || len(evs) != 1 || evs[0].Type != agent.EventRunInterrupted {
		t.Fatalf("Run = %v, %+v", err, evs)
	}
}
