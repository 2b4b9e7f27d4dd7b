// Provider tests against the scripted fake agent (fakeagent_test.go).

package acp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
	"github.com/threadline-bot/threadline/providers/providertest"
)

type harness struct {
	t      *testing.T
	def    Definition
	prov   *Provider
	record string
	cwd    string
}

func newHarness(t *testing.T, env map[string]string, tweak ...func(*Definition)) *harness {
	t.Helper()
	fake := providertest.SelfFake(t, envRecord, map[string]string{envFake: "1"}, env)
	def := Definition{ID: "fake", Name: "Fake", Bin: fake.Bin, Env: fake.Env, Resume: true, VerifiedWith: []string{"9.9.9"}}
	for _, f := range tweak {
		f(&def)
	}
	prov := New(def, providertest.Logger(t), Options{Launch: procrun.Launch{StopGrace: 2 * time.Second, HostEnv: func() []string { return nil }}})
	return &harness{t: t, def: def, prov: prov, record: fake.Record, cwd: t.TempDir()}
}

// run executes one Run in the harness's cwd (see providertest.Run);
// onEvent (optional) sees each event with the cancel.
func (h *harness) run(req agent.RunRequest, onEvent providertest.OnEvent) *providertest.Result {
	h.t.Helper()
	if req.Cwd == "" {
		req.Cwd = h.cwd
	}
	return providertest.Run(h.t, h.prov, req, onEvent)
}

// recorded returns the fake's record (providertest.Record: argv, env and
// the client's stdin lines) with those lines decoded and raw.
func (h *harness) recorded() (rec providertest.Record, lines []rpcMessage, raw []string) {
	h.t.Helper()
	rec = providertest.ReadRecord(h.t, h.record)
	for _, l := range rec.Stdin {
		var m rpcMessage
		if err := json.Unmarshal(l, &m); err != nil {
			h.t.Fatalf("client wrote a non-JSON line %q", l)
		}
		lines = append(lines, m)
		raw = append(raw, string(l))
	}
	return rec, lines, raw
}

func (h *harness) sent(method string) []rpcMessage {
	_, lines, _ := h.recorded()
	var out []rpcMessage
	for _, m := range lines {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// answers returns the client's answers to the fake's requests, by id.
func (h *harness) answers() map[string]rpcMessage {
	_, lines, _ := h.recorded()
	out := map[string]rpcMessage{}
	for _, m := range lines {
		if m.Method == "" && jsonrpc.HasID(m.ID) {
			out[string(m.ID)] = m
		}
	}
	return out
}

func TestRunText(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "text"}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	want := "session.updated reasoning.delta assistant.delta assistant.delta system provider.native usage.updated run.completed"
	if r.TypesText() != want {
		t.Fatalf("events\n got %s\nwant %s", r.TypesText(), want)
	}
	if ev := r.Events[0]; ev.SessionID != fakeSession || ev.Model != "m1" {
		t.Errorf("session.updated %+v", ev)
	}
	if plan := r.Of(agent.EventSystem)[0]; plan.Subtype != "plan" || plan.Text != "[x] step one\n[ ] step two" {
		t.Errorf("plan %+v", plan)
	}
	if u := r.Of(agent.EventUsageUpdated)[0].Usage; u.InputTokens != 10 || u.OutputTokens != 5 || u.CostUSD != 0.25 {
		t.Errorf("usage %+v", u)
	}
	if last := r.Last(); last.Text != "Hello" {
		t.Errorf("run.completed text %q", last.Text)
	}
	_, lines, _ := h.recorded()
	if cwd, _ := os.ReadFile(h.record + ".cwd"); string(cwd) != h.cwd {
		t.Errorf("agent ran in %q, want %q", cwd, h.cwd)
	}
	var methods []string
	for _, m := range lines {
		methods = append(methods, m.Method)
	}
	if !slices.Equal(methods, []string{"initialize", "session/new", "session/prompt"}) {
		t.Errorf("client sent %q", methods)
	}
	var init InitializeParams
	if err := json.Unmarshal(lines[0].Params, &init); err != nil || init.ProtocolVersion != 1 || init.ClientCapabilities.FS.ReadTextFile || init.ClientCapabilities.FS.WriteTextFile || init.ClientCapabilities.Terminal {
		t.Errorf("initialize params %s", lines[0].Params)
	}
	if string(lines[1].Params) != `{"cwd":"`+h.cwd+`","mcpServers":[]}` {
		t.Errorf("session/new params %s (mcpServers must be [] not null)", lines[1].Params)
	}
}

func TestRunToolEvents(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "tool"}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	started := r.Of(agent.EventToolStarted)
	if len(started) != 1 || started[0].Tool.ID != "t1" || started[0].Tool.Name != "bash" || started[0].Tool.Summary != "ls -la" || string(started[0].Tool.Input) != `{"command":"ls -la"}` {
		t.Fatalf("tool.started %+v", started)
	}
	if outs := r.Texts(agent.EventToolOutput); !slices.Equal(outs, []string{"out1", "out2"}) {
		t.Errorf("tool.output deltas %q", outs)
	}
	done := r.Of(agent.EventToolCompleted)
	if len(done) != 1 || done[0].Tool.Output != "out1out2" || done[0].Tool.IsError {
		t.Errorf("tool.completed %+v", done)
	}
	if r.Last().Text != "done" {
		t.Errorf("final text %q (text after the tool only)", r.Last().Text)
	}
}

// permOutcome is how the fake's permission request ends: the option the
// client answered and the resolution's status and decision.
type permOutcome struct {
	option, status string
	decision       agent.Decision
}

// checkResolved fails t unless the run resolved the one request (id "0")
// as want says, by by, and answered the fake with want.option.
func (h *harness) checkResolved(t *testing.T, r *providertest.Result, want permOutcome, by string) {
	t.Helper()
	res := r.Of(agent.EventInteractionResolved)
	if len(r.Of(agent.EventInteractionRequested)) != 1 || len(res) != 1 || res[0].Resolution.Status != want.status || res[0].Resolution.Decision != want.decision || res[0].Resolution.By != by || string(res[0].Native.ID) != "0" {
		t.Fatalf("events %s; resolution %+v", r.TypesText(), res)
	}
	if ans := h.answers()["0"]; string(ans.Result) != `{"outcome":{"outcome":"selected","optionId":"`+want.option+`"}}` {
		t.Errorf("answer sent %s", ans.Result)
	}
}

var (
	allowOnce   = permOutcome{"once", agent.StatusApproved, agent.DecisionApprove}
	allowAlways = permOutcome{"always", agent.StatusApproved, agent.DecisionApproveSession}
	rejected    = permOutcome{"reject", agent.StatusDeclined, agent.DecisionDecline}
)

func TestRunPermissionAnswers(t *testing.T) {
	tests := []struct {
		name string
		resp agent.InteractionResponse
		want permOutcome
	}{
		{"approve", agent.InteractionResponse{Decision: agent.DecisionApprove}, allowOnce},
		{"approve session", agent.InteractionResponse{Decision: agent.DecisionApproveSession}, allowAlways},
		{"decline", agent.InteractionResponse{Decision: agent.DecisionDecline}, rejected},
		{"explicit option", agent.InteractionResponse{OptionID: "always", Decision: agent.DecisionDecline}, allowAlways},
		{"unknown decision never allows", agent.InteractionResponse{Decision: "maybe"}, rejected},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			responses := make(chan agent.InteractionResponse, 4)
			r := h.run(agent.RunRequest{Prompt: "perm", Approval: agent.ApprovalAsk, Responses: responses}, func(ev agent.Event, _ context.CancelFunc) {
				if ev.Type != agent.EventInteractionRequested {
					return
				}
				// Noise first: an unknown interaction and an unknown option are ignored.
				responses <- agent.InteractionResponse{InteractionID: "nope", Decision: agent.DecisionApprove}
				responses <- agent.InteractionResponse{InteractionID: ev.Interaction.ID, OptionID: "no-such-option"}
				resp := tt.resp
				resp.InteractionID, resp.By = ev.Interaction.ID, "alice"
				responses <- resp
			})
			if r.Err != nil {
				t.Fatalf("Run: %v", r.Err)
			}
			req := r.Of(agent.EventInteractionRequested)
			if len(req) != 1 {
				t.Fatalf("events %s", r.TypesText())
			}
			in := req[0].Interaction
			if in.ID != "0" || string(in.NativeID) != "0" || in.Kind != agent.KindCommandApproval || in.Command != "rm -rf build" || in.Cwd != h.cwd {
				t.Errorf("interaction %+v", in)
			}
			wantOpts := []agent.Option{{ID: "once", Label: "Allow once", Kind: agent.DecisionApprove}, {ID: "always", Label: "Always allow", Kind: agent.DecisionApproveSession}, {ID: "reject", Label: "Reject", Kind: agent.DecisionDecline}}
			if !slices.Equal(in.Options, wantOpts) {
				t.Errorf("options %+v", in.Options)
			}
			h.checkResolved(t, r, tt.want, "alice")
			started := r.Of(agent.EventToolStarted)
			if len(started) != 1 || r.Events[slices.IndexFunc(r.Events, func(e agent.Event) bool { return e.Type == agent.EventToolStarted })+1].Type != agent.EventInteractionRequested {
				t.Errorf("tool.started must precede the request: %s", r.TypesText())
			}
		})
	}
}

func TestRunPermissionByPolicy(t *testing.T) {
	for _, tt := range []struct {
		name string
		req  agent.RunRequest
		want permOutcome
	}{
		{"deny", agent.RunRequest{Approval: agent.ApprovalDeny}, rejected},
		{"ask without responses", agent.RunRequest{Approval: agent.ApprovalAsk}, rejected},
		{"accept", agent.RunRequest{Approval: agent.ApprovalAccept, Responses: make(chan agent.InteractionResponse)}, allowOnce},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			req := tt.req
			req.Prompt = "perm"
			r := h.run(req, nil)
			if r.Err != nil {
				t.Fatalf("Run: %v", r.Err)
			}
			h.checkResolved(t, r, tt.want, "policy")
			if want := "after: "; tt.want.status == agent.StatusApproved && !strings.HasPrefix(r.Last().Text, want+"ran with once") {
				t.Errorf("final %q", r.Last().Text)
			}
		})
	}
}

func TestRunPermissionCancelDecision(t *testing.T) {
	h := newHarness(t, nil)
	responses := make(chan agent.InteractionResponse, 1)
	r := h.run(agent.RunRequest{Prompt: "perm", Responses: responses}, providertest.Answer(responses, providertest.Decide(agent.DecisionCancel, nil, "bob")))
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	res := r.Of(agent.EventInteractionResolved)
	if len(res) != 1 || res[0].Resolution.Status != agent.StatusCancelled || res[0].Resolution.Decision != agent.DecisionCancel || res[0].Resolution.By != "bob" {
		t.Fatalf("resolution %+v", res)
	}
	if r.Last().Type != agent.EventRunInterrupted {
		t.Errorf("events %s", r.TypesText())
	}
	if len(h.sent("session/cancel")) != 1 {
		t.Error("no session/cancel sent")
	}
}

func TestRunIDsByteExact(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "ids", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	var ids []string
	for _, ev := range r.Of(agent.EventInteractionRequested) {
		ids = append(ids, ev.Interaction.ID+"="+string(ev.Interaction.NativeID))
	}
	if !slices.Equal(ids, []string{`7=7`, `"7"="7"`}) {
		t.Errorf("interaction ids %q", ids)
	}
	ans := h.answers()
	if _, ok := ans["7"]; !ok {
		t.Error("no answer to id 7")
	}
	if _, ok := ans[`"7"`]; !ok {
		t.Error(`no answer to id "7"`)
	}
}

func TestRunDuplicateRequestFails(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "dup", Responses: make(chan agent.InteractionResponse)}, nil)
	if !errors.Is(r.Err, agent.ErrRunFailed) || !errors.Is(r.Err, agent.ErrDuplicateRequest) {
		t.Fatalf("Run = %v", r.Err)
	}
	if r.Last().Type != agent.EventRunFailed {
		t.Errorf("events %s", r.TypesText())
	}
	if r.Elapsed > 5*time.Second {
		t.Errorf("took %s", r.Elapsed)
	}
}

func TestRunCancelStreaming(t *testing.T) {
	h := newHarness(t, nil)
	var cancelledAt time.Time
	r := h.run(agent.RunRequest{Prompt: "slow"}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && ev.Text == "w002 " {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if r.Err != nil {
		t.Fatalf("Run after cancel = %v, want nil", r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunInterrupted || last.Text != "cancelled" {
		t.Errorf("last %+v (want the agent's cancelled stop reason)", last)
	}
	if took := time.Since(cancelledAt); took > time.Second {
		t.Errorf("Run returned %s after cancel", took)
	}
	if n := len(h.sent("session/cancel")); n != 1 {
		t.Errorf("%d session/cancel sent", n)
	}
}

func TestRunCancelPendingPermission(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "perm", Responses: make(chan agent.InteractionResponse)}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventInteractionRequested {
			cancel()
		}
	})
	if r.Err != nil {
		t.Fatalf("Run = %v", r.Err)
	}
	res := r.Of(agent.EventInteractionResolved)
	if len(res) != 1 || res[0].Resolution.Status != agent.StatusCancelled {
		t.Fatalf("resolution %+v", res)
	}
	if r.Last().Type != agent.EventRunInterrupted {
		t.Errorf("events %s", r.TypesText())
	}
	// The cancel notification goes first, then the cancelled outcome.
	_, _, raw := h.recorded()
	ci := slices.IndexFunc(raw, func(s string) bool { return strings.Contains(s, `"session/cancel"`) })
	ai := slices.IndexFunc(raw, func(s string) bool { return strings.Contains(s, `"outcome":{"outcome":"cancelled"}`) })
	if ci < 0 || ai < 0 || ai < ci {
		t.Errorf("cancel at %d, cancelled outcome at %d: %q", ci, ai, raw)
	}
	if done := r.Of(agent.EventToolCompleted); len(done) != 1 || !done[0].Tool.IsError {
		t.Errorf("tool.completed %+v", done)
	}
}

// TestExitTimeout: an agent that stays after stdin's end is killed
// Definition.ExitTimeout after its turn ended, a completed or a cancelled
// one, however long StopGrace is; without it, after StopGrace.
func TestExitTimeout(t *testing.T) {
	const interrupt = 1500 * time.Millisecond
	stay := map[string]string{envStay: "1"}
	h := newHarness(t, stay, func(d *Definition) { d.ExitTimeout = 50 * time.Millisecond })
	h.prov.opts.StopGrace = 20 * interrupt
	r := h.run(agent.RunRequest{Prompt: "stop:end_turn"}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted || r.Elapsed > 10*interrupt {
		t.Errorf("completed turn: Run = %v in %s, events %s", r.Err, r.Elapsed, r.TypesText())
	}
	var cancelledAt time.Time
	r = h.run(agent.RunRequest{Prompt: "slow"}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if took := time.Since(cancelledAt); r.Err != nil || r.Last().Type != agent.EventRunInterrupted || r.Last().Text != "cancelled" || took > 10*interrupt {
		t.Errorf("cancelled turn: Run = %v %s after the cancel, events %s", r.Err, took, r.TypesText())
	}
	// Without it the agent lives until the interrupt deadline.
	h = newHarness(t, stay)
	h.prov.opts.StopGrace = interrupt
	if r := h.run(agent.RunRequest{Prompt: "stop:end_turn"}, nil); r.Elapsed < interrupt {
		t.Errorf("without ExitTimeout Run returned in %s, before the %s deadline", r.Elapsed, interrupt)
	}
}

func TestRunCancelKillsAfterDeadline(t *testing.T) {
	h := newHarness(t, nil)
	h.prov.opts.StopGrace = 300 * time.Millisecond
	var cancelledAt time.Time
	r := h.run(agent.RunRequest{Prompt: "hang"}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventAssistantDelta && cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	})
	if r.Err != nil {
		t.Fatalf("Run = %v", r.Err)
	}
	if last := r.Last(); last.Type != agent.EventRunInterrupted {
		t.Errorf("events %s", r.TypesText())
	}
	if took := time.Since(cancelledAt); took < 300*time.Millisecond || took > 3*time.Second {
		t.Errorf("Run returned %s after cancel (deadline 300ms, then kill)", took)
	}
}

func TestRunCancelBeforeStart(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var evs []agent.Event
	err := h.prov.Run(ctx, agent.RunRequest{Prompt: "text", Cwd: h.cwd}, func(ev agent.Event) { evs = append(evs, ev) })
	if err != nil || len(evs) != 1 || evs[0].Type != agent.EventRunInterrupted {
		t.Fatalf("Run = %v, events %+v", err, evs)
	}
	if _, err := os.Stat(h.record); err == nil {
		t.Error("the agent was started")
	}
}

func TestRunLoad(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "replay before the answer"
		if late {
			name = "replay after the answer"
		}
		t.Run(name, func(t *testing.T) {
			env := map[string]string{}
			if late {
				env[envLateLoad] = "1"
			}
			h := newHarness(t, env, func(d *Definition) {
				if late {
					d.LoadQuiet = 200 * time.Millisecond
				}
			})
			r := h.run(agent.RunRequest{Prompt: "hello", ResumeID: knownSession}, nil)
			if r.Err != nil {
				t.Fatalf("Run: %v", r.Err)
			}
			if r.Text() != "echo: hello" || strings.Contains(r.TypesText(), "tool.") || len(r.Of(agent.EventSessionUpdated)) != 0 {
				t.Errorf("replayed history re-emitted: %s, text %q", r.TypesText(), r.Text())
			}
			if load := h.sent("session/load"); len(load) != 1 || string(load[0].Params) != `{"sessionId":"`+knownSession+`","cwd":"`+h.cwd+`","mcpServers":[]}` {
				t.Errorf("session/load %+v", load)
			}
			if len(h.sent("session/new")) != 0 {
				t.Error("session/new sent on resume")
			}
		})
	}
}

func TestRunLoadUnknownSession(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "hello", ResumeID: "stale-id"}, nil)
	if !errors.Is(r.Err, agent.ErrSessionNotFound) {
		t.Fatalf("Run = %v, want ErrSessionNotFound", r.Err)
	}
	if len(r.Of(agent.EventRunFailed)) != 0 || r.Last().Subtype != "session_not_found" {
		t.Errorf("events %s", r.TypesText())
	}
	if len(h.sent("session/prompt")) != 0 {
		t.Error("prompt sent after a failed load")
	}
}

func TestRunResumeRefusedEarly(t *testing.T) {
	t.Run("fork", func(t *testing.T) {
		h := newHarness(t, nil)
		r := h.run(agent.RunRequest{Prompt: "x", ResumeID: knownSession, Fork: true}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) || len(r.Events) != 0 {
			t.Fatalf("Run = %v, events %s", r.Err, r.TypesText())
		}
	})
	t.Run("definition without resume", func(t *testing.T) {
		h := newHarness(t, nil, func(d *Definition) { d.Resume = false })
		r := h.run(agent.RunRequest{Prompt: "x", ResumeID: knownSession}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) || len(r.Events) != 0 {
			t.Fatalf("Run = %v, events %s", r.Err, r.TypesText())
		}
		// And no session id is reported for it.
		r = h.run(agent.RunRequest{Prompt: "x"}, nil)
		if r.Err != nil || len(r.Of(agent.EventSessionUpdated)) != 0 || r.Events[0].Native.Kind != "session/new" {
			t.Fatalf("Run = %v, events %s", r.Err, r.TypesText())
		}
	})
	t.Run("agent without loadSession", func(t *testing.T) {
		h := newHarness(t, map[string]string{envNoLoad: "1"})
		r := h.run(agent.RunRequest{Prompt: "x", ResumeID: knownSession}, nil)
		if !errors.Is(r.Err, agent.ErrSessionNotFound) {
			t.Fatalf("Run = %v", r.Err)
		}
		r = h.run(agent.RunRequest{Prompt: "x"}, nil)
		if r.Err != nil || len(r.Of(agent.EventSessionUpdated)) != 0 {
			t.Fatalf("a non-loadable session was reported: %s", r.TypesText())
		}
	})
}

func TestRunFailures(t *testing.T) {
	tests := []struct {
		name, prompt, env, want string
		typ                     agent.EventType
	}{
		{"prompt error", "error", "", "Internal error (code -32603): 500 fake upstream failure", agent.EventRunFailed},
		{"max tokens", "stop:max_tokens", "", "output token limit", agent.EventRunFailed},
		{"max turn requests", "stop:max_turn_requests", "", "limit of model requests", agent.EventRunFailed},
		{"refusal", "stop:refusal", "", "refused", agent.EventRunFailed},
		{"unknown stop reason", "stop:weird", "", `unknown stop reason "weird"`, agent.EventRunFailed},
		{"unsolicited cancelled", "stop:cancelled", "", "cancelled", agent.EventRunInterrupted},
		{"crash", "crash", "", "boom: the fake agent crashed", agent.EventRunFailed},
		{"protocol version", "text", "2", "fake-acp 9.9.9 answered ACP protocolVersion 2; this client speaks protocolVersion [1] and was verified with fake 9.9.9", agent.EventRunFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			if tt.env != "" {
				env[envProto] = tt.env
			}
			h := newHarness(t, env)
			r := h.run(agent.RunRequest{Prompt: tt.prompt}, nil)
			last := r.Last()
			if last.Type != tt.typ || !strings.Contains(last.Text, tt.want) {
				t.Fatalf("last %+v; events %s", last, r.TypesText())
			}
			if tt.typ == agent.EventRunFailed && !errors.Is(r.Err, agent.ErrRunFailed) {
				t.Errorf("Run = %v, want ErrRunFailed", r.Err)
			}
			if tt.typ == agent.EventRunInterrupted && r.Err != nil {
				t.Errorf("Run = %v", r.Err)
			}
		})
	}
}

func TestRunClientCalls(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "calls", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if b, err := os.ReadFile(filepath.Join(h.cwd, "sub", "x.txt")); err != nil || string(b) != "written\n" {
		t.Errorf("fs write inside the cwd: %q %v", b, err)
	}
	if _, err := os.Stat("/etc/threadline-should-not-exist"); err == nil {
		t.Error("fs write outside the cwd happened")
	}
	ans := h.answers()
	check := func(id, want string) {
		t.Helper()
		got := string(ans[id].Result)
		if ans[id].Error != nil {
			b, _ := json.Marshal(ans[id].Error)
			got = string(b)
		}
		if !strings.Contains(got, want) {
			t.Errorf("answer %s = %s, want %s", id, got, want)
		}
	}
	check("0", `{}`)
	check("1", `"code":-32602`)
	check("2", `{"content":"written\n"}`)
	check("3", `"code":-32601`)
	check("4", `"code":-32601`)
	kinds := map[string]bool{}
	for _, ev := range r.Of(agent.EventProviderNative) {
		kinds[ev.Native.Kind] = true
	}
	for _, k := range []string{"fs/write_text_file", "fs/read_text_file", "terminal/create", "craft/drainMidTurnQueue", "qwen/notify/session/mode-update"} {
		if !kinds[k] {
			t.Errorf("no provider.native %s", k)
		}
	}
}

func TestRunDenyPolicyRefusesWrites(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "calls", Approval: agent.ApprovalDeny}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if _, err := os.Stat(filepath.Join(h.cwd, "sub", "x.txt")); err == nil {
		t.Error("fs write happened under the deny policy")
	}
}

func TestRunLateUpdatesDropped(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "late"}, nil)
	if r.Err != nil || r.Text() != "on time" || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, events %s, text %q", r.Err, r.TypesText(), r.Text())
	}
}

func TestRunModelAndMode(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "x", Model: "m2", Mode: agent.ModePlan}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	set := h.sent("session/set_config_option")
	if len(set) != 2 || string(set[0].Params) != `{"configId":"model","sessionId":"fake-session-1","value":"m2"}` || string(set[1].Params) != `{"configId":"mode","sessionId":"fake-session-1","value":"plan"}` {
		t.Errorf("set_config_option %+v", set)
	}
	r = h.run(agent.RunRequest{Prompt: "x", Model: "bad-model"}, nil)
	if !errors.Is(r.Err, agent.ErrRunFailed) || !strings.Contains(r.Last().Text, `cannot select model "bad-model"`) {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
}

func TestRunImages(t *testing.T) {
	h := newHarness(t, nil)
	r := h.run(agent.RunRequest{Prompt: "image", Images: []agent.Image{{MediaType: "image/png", Data: []byte{1, 2, 3}}}}, nil)
	if r.Err != nil || r.Text() != "image:image/png:AQID,text::" {
		t.Fatalf("Run = %v, text %q", r.Err, r.Text())
	}
}

func TestRunLaunch(t *testing.T) {
	h := newHarness(t, nil, func(d *Definition) {
		d.Args = []string{"acp"}
		d.PolicyArgs = func(p agent.ApprovalPolicy) []string { return []string{"--policy", string(p)} }
		d.PolicyEnv = func(p agent.ApprovalPolicy) map[string]string { return map[string]string{"FAKE_POLICY": string(p)} }
	})
	h.prov.opts.Env = map[string]string{"FROM_OPTIONS": "1", "THREADLINE_TOKEN": "leak"}
	r := h.run(agent.RunRequest{Prompt: "x", Args: []string{"--extra"}, Env: map[string]string{"FROM_RUN": "2"}, Approval: agent.ApprovalDeny}, nil)
	if r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	rec, _, _ := h.recorded()
	if !slices.Equal(rec.Argv, []string{"acp", "--policy", "ask", "--extra"}) {
		t.Errorf("argv %q", rec.Argv)
	}
	env := map[string]bool{}
	for _, e := range rec.Env {
		env[e] = true
	}
	for _, want := range []string{"FAKE_POLICY=ask", "FROM_OPTIONS=1", "FROM_RUN=2"} {
		if !env[want] {
			t.Errorf("child env lacks %s", want)
		}
	}
	if env["THREADLINE_TOKEN=leak"] {
		t.Error("a bot secret reached the child")
	}
}

func TestDescriptors(t *testing.T) {
	for _, d := range definitions() {
		desc := d.Descriptor
		if string(d.ID) != desc.ID || d.Name != desc.Name || d.Bin != desc.Executable || !slices.Equal(d.Args, desc.Args.Base) ||
			d.InstallHint != desc.InstallHint || !slices.Equal(d.VerifiedWith, desc.VerifiedVersions) || d.Resume != (desc.Resume == "protocol") {
			t.Errorf("%s: definition %+v does not follow its descriptor %+v", d.ID, d, desc)
		}
		if desc.Format != "acp" || desc.Prompt != "protocol" || desc.Args.Model != "" || desc.Args.Resume != "" {
			t.Errorf("%s: descriptor %+v", d.ID, desc)
		}
	}
	if Gemini().Resume || Gemini().Descriptor.Resume != "none" {
		t.Error("gemini resumes (its session/load loses history)")
	}
}

func TestRunNotInstalled(t *testing.T) {
	p := New(Kiro(), nil, Options{})
	err := p.Run(t.Context(), agent.RunRequest{Prompt: "x", Bin: "threadline-no-such-kiro"}, func(agent.Event) { t.Error("event emitted") })
	if !errors.Is(err, agent.ErrNotInstalled) || !strings.Contains(err.Error(), Kiro().InstallHint) {
		t.Fatalf("Run = %v", err)
	}
}

// TestRunMCPServers: the run's MCP servers reach session/new and
// session/load once each, as stdio entries with their env as name/value
// pairs; the prompt stays out of them.
func TestRunMCPServers(t *testing.T) {
	srv := agent.MCPServer{Name: "threadline", Command: "/opt/threadline/threadline-mcp",
		Env: []agent.EnvVar{{Key: "THREADLINE_TOOLS_SOCKET", Value: "/tmp/t/s"}, {Key: "THREADLINE_TOOLS_TOKEN", Value: "tok-1"}}}
	const want = `"mcpServers":[{"name":"threadline","command":"/opt/threadline/threadline-mcp","args":[],` +
		`"env":[{"name":"THREADLINE_TOOLS_SOCKET","value":"/tmp/t/s"},{"name":"THREADLINE_TOOLS_TOKEN","value":"tok-1"}]}]}`
	h := newHarness(t, nil)
	if r := h.run(agent.RunRequest{Prompt: "text --mcp", MCPServers: []agent.MCPServer{srv}}, nil); r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if sent := h.sent("session/new"); len(sent) != 1 || string(sent[0].Params) != `{"cwd":"`+h.cwd+`",`+want {
		t.Errorf("session/new %+v", sent)
	}
	h = newHarness(t, nil)
	if r := h.run(agent.RunRequest{Prompt: "hello", ResumeID: knownSession, MCPServers: []agent.MCPServer{srv}}, nil); r.Err != nil {
		t.Fatalf("Run: %v", r.Err)
	}
	if sent := h.sent("session/load"); len(sent) != 1 || string(sent[0].Params) != `{"sessionId":"`+knownSession+`","cwd":"`+h.cwd+`",`+want {
		t.Errorf("session/load %+v", sent)
	}
}
