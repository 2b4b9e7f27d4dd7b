// End-to-end tests of the ACP CLIs added after opencode, qwen and gemini
// (kilo, copilot-acp, droid, codex-acp, claude-agent-acp; pinned in
// package.json), each against the scripted model server of its API inside a
// loopback-only network namespace: a shell tool asked and approved (the file
// is written), asked and declined (no file, the turn completes), a cancel
// in the middle of a streamed answer, and a second turn that resumes the
// first. After every run no process the run started is left.

package acp_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
	"github.com/threadline-bot/threadline/providers/codex/fakeresponses"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// api is the model API a CLI talks to.
type api int

const (
	chatCompletions api = iota
	responsesAPI
	messagesAPI
)

// familyCLI is one CLI of the family under test.
type familyCLI struct {
	def    acp.Definition
	envVar string // overrides the executable
	api    api
	model  string
	// buffered: the CLI sends the answer's text at its end, not as it
	// streams (droid), so a cancel mid-turn is sent once the model request
	// is in flight.
	buffered bool
	// declineStops: declining is the CLI's "No, and tell it what to do
	// differently", which ends the turn as cancelled (codex-acp offers no
	// other reject).
	declineStops bool
	// sharedCache shares $XDG_CACHE_HOME between the tests and
	// scripts/install-agents.sh (<repo>/.cache/agents-xdg): copilot unpacks
	// 235 MB there on its first start.
	sharedCache bool
	// more are the CLI's own subtests, after its group's.
	more []scenario
}

// scenario is one subtest of TestE2E, run on one CLI.
type scenario struct {
	name string
	run  func(t *testing.T, c familyCLI)
}

var familyCLIs = []familyCLI{
	{def: acp.Kilo(), envVar: "THREADLINE_KILO_BIN", api: chatCompletions, model: fakeopenai.DefaultModel},
	{def: acp.CopilotACP(), envVar: "THREADLINE_COPILOT_BIN", api: chatCompletions, model: fakeopenai.DefaultModel, sharedCache: true},
	{def: acp.Droid(), envVar: "THREADLINE_DROID_BIN", api: chatCompletions, model: fakeopenai.DefaultModel, buffered: true},
	// A model id Codex has metadata for (else it says so as the answer).
	{def: acp.CodexACP(), envVar: "THREADLINE_CODEX_ACP_BIN", api: responsesAPI, model: "gpt-5.4", declineStops: true},
	{def: acp.ClaudeAgentACP(), envVar: "THREADLINE_CLAUDE_AGENT_ACP_BIN", api: messagesAPI, model: "claude-sonnet-4-5"},
}

// scene is one scripted exchange, whichever API serves it: the requests
// whose last user text contains trigger get a shell tool call of shell, a
// slow stream (slow), or text.
type scene struct {
	trigger string
	shell   string
	slow    bool
	text    []string
	// arrived, when set, is closed when the first request of the scene
	// arrives.
	arrived chan struct{}
}

// arrival wraps a script of the scene so that it reports the first request.
func arrival[S ~func(*R) *P, R, P any](sc scene, s S) S {
	if sc.arrived == nil {
		return s
	}
	var once sync.Once
	return func(req *R) *P {
		r := s(req)
		if r != nil {
			once.Do(func() { close(sc.arrived) })
		}
		return r
	}
}

// shellTools are the shell tools of the family over Chat Completions
// (kilo and copilot bash, droid Execute).
var shellTools = append([]string{"Execute"}, fakeopenai.ShellTools...)

// modelServer is a scripted model server of one API.
type modelServer interface {
	endpoint(e *acp.Endpoint)
	// transcripts renders every request the server saw, "role: text" lines.
	transcripts() []string
}

type chatServer struct{ *fakeopenai.Server }

// endpoint: fakeopenai also serves the Gemini API (for gemini).
func (s chatServer) endpoint(e *acp.Endpoint) {
	e.OpenAIBaseURL, e.GeminiBaseURL = s.URL()+"/v1", s.URL()
}
func (s chatServer) transcripts() []string { return providertest.Transcripts(s.ChatRequests()) }

type responsesServer struct{ *fakeresponses.Server }

func (s responsesServer) endpoint(e *acp.Endpoint) { e.ResponsesBaseURL = s.BaseURL() }
func (s responsesServer) transcripts() []string {
	return providertest.Transcripts(s.Requests())
}

type messagesServer struct{ *fakeapi.Server }

func (s messagesServer) endpoint(e *acp.Endpoint) { e.AnthropicBaseURL = s.URL() }
func (s messagesServer) transcripts() []string {
	return providertest.Transcripts(s.MessageRequests())
}

// startModel starts the server of a with the scenes scripted.
func startModel(t *testing.T, a api, scenes ...scene) modelServer {
	const why = "Run a command for the fake test"
	switch a {
	case responsesAPI:
		return responsesServer{fakeresponses.New(t, scripts(scenes, fakeresponses.WhenLast, fakeresponses.Text, fakeresponses.Shell, fakeresponses.Slow)...)}
	case messagesAPI:
		bash := func(cmd string) fakeapi.Script {
			return fakeapi.ToolUse("Bash", map[string]any{"command": cmd, "description": why})
		}
		return messagesServer{fakeapi.New(t, scripts(scenes, fakeapi.When, fakeapi.Text, bash, fakeapi.Slow)...)}
	}
	shell := func(cmd string) fakeopenai.Script {
		return fakeopenai.Call(shellTools, func(tool fakeopenai.Tool) map[string]any {
			args := map[string]any{"command": cmd, "description": why}
			if tool.Name == "Execute" { // droid: the model rates the command's risk
				args["riskLevel"], args["riskLevelReason"] = "medium", "It writes a file in the working directory."
			}
			return args
		})
	}
	slow := func(n int, every time.Duration) fakeopenai.Script {
		return fakeopenai.WithTools(fakeopenai.Slow(n, every))
	}
	return chatServer{fakeopenai.New(t, scripts(scenes, fakeopenai.When, fakeopenai.Text, shell, slow)...)}
}

// scripts turns the scenes into scripts of one fake, with its constructors:
// a shell tool call, the slow stream of providertest.SlowScript, or text.
func scripts[S ~func(*R) *P, R, P any](scenes []scene, when func(string, S) S, text func(...string) S, shell func(string) S, slow func(int, time.Duration) S) []S {
	var out []S
	for _, sc := range scenes {
		s := text(sc.text...)
		switch {
		case sc.shell != "":
			s = shell(sc.shell)
		case sc.slow:
			s = slow(providertest.SlowWords, providertest.SlowEvery)
		}
		out = append(out, when(sc.trigger, arrival(sc, s)))
	}
	return out
}

// familyHarness runs one CLI against its model server, every process of a
// run marked (providertest.MarkEnv) to find any it leaves.
type familyHarness = providertest.Harness[modelServer, *acp.Provider]

// setupFamily returns nil in the outer test process (the test then ran, or
// was skipped, in the netns child) and, inside the netns, the harness of c
// against the server of its API with the scenes scripted.
func setupFamily(t *testing.T, c familyCLI, scenes ...scene) *familyHarness {
	t.Helper()
	return newHarness(t, c, func(t *testing.T) modelServer { return startModel(t, c.api, scenes...) })
}

// newHarness is setupFamily with the model server that start starts
// (inside the netns only).
func newHarness(t *testing.T, c familyCLI, start func(t *testing.T) modelServer) *familyHarness {
	t.Helper()
	return providertest.Setup(t, providertest.CLI{Name: c.def.Bin, EnvVar: c.envVar}, start, func(h *familyHarness) *acp.Provider {
		ep := acp.Endpoint{APIKey: "sk-fake", Model: c.model}
		h.Fake.endpoint(&ep)
		env, err := c.def.Configure(t.TempDir(), ep)
		if err != nil {
			t.Fatal(err)
		}
		if c.sharedCache {
			providertest.SharedCache(t, env)
		}
		// Anything that is not loopback fails at once: there is no route, and
		// proxy-aware clients get a dead local proxy.
		providertest.DeadProxy(env)
		return acp.New(c.def, providertest.Logger(t), acp.Options{Launch: h.Launch(env, 5*time.Second)})
	})
}

// transcripts renders every request h's model server saw, for failure
// messages.
func transcripts(h *familyHarness) string {
	var sb strings.Builder
	for i, tr := range h.Fake.transcripts() {
		fmt.Fprintf(&sb, "--- request %d\n%s", i+1, tr)
	}
	return sb.String()
}

// familyScenarios are the subtests of each CLI of familyCLIs.
var familyScenarios = []scenario{
	{"allow", testAllow}, {"reject", testReject}, {"cancel", testFamilyCancel}, {"cancel-tool", testFamilyCancelTool},
	{"background", testFamilyBackground}, {"resume", testFamilyResume},
}

func testAllow(t *testing.T, c familyCLI)  { testFamilyPermission(t, c, agent.DecisionApprove) }
func testReject(t *testing.T, c familyCLI) { testFamilyPermission(t, c, agent.DecisionDecline) }

// testFamilyPermission: the shell tool asks, the chat answers d; approved
// writes the file, declined leaves none and the turn still completes.
func testFamilyPermission(t *testing.T, c familyCLI, d agent.Decision) {
	file := "allowed.txt"
	if d == agent.DecisionDecline {
		file = "rejected.txt"
	}
	h := setupFamily(t, c, scene{trigger: "e2e-perm", shell: "echo perm > " + file})
	if h == nil {
		return
	}
	responses := make(chan agent.InteractionResponse, 4)
	r := h.Run(agent.RunRequest{Prompt: "e2e-perm: run it", Approval: agent.ApprovalAsk, Responses: responses},
		providertest.Answer(responses, providertest.Always(d, nil)))
	end := agent.EventRunCompleted
	if d == agent.DecisionDecline && c.declineStops {
		end = agent.EventRunInterrupted
	}
	if r.Err != nil || r.Last().Type != end {
		t.Fatalf("Run = %v, last %+v; transcripts:\n%s", r.Err, r.Last(), transcripts(h))
	}
	req := r.Of(agent.EventInteractionRequested)
	if len(req) != 1 {
		t.Fatalf("%d interaction.requested", len(req))
	}
	in := req[0].Interaction
	kinds := map[agent.Decision]bool{}
	for _, o := range in.Options {
		kinds[o.Kind] = true
	}
	if in.Kind != agent.KindCommandApproval || !strings.Contains(in.Command, "echo perm") || len(in.NativeID) == 0 ||
		!kinds[agent.DecisionApprove] || !kinds[agent.DecisionDecline] {
		t.Errorf("interaction %+v", in)
	}
	want := agent.StatusApproved
	if d == agent.DecisionDecline {
		want = agent.StatusDeclined
	}
	if res := r.Of(agent.EventInteractionResolved); len(res) != 1 || res[0].Resolution.Status != want || res[0].Resolution.By != "e2e" {
		t.Fatalf("resolution %+v", res)
	}
	if got := h.Exists(file); got != (d == agent.DecisionApprove) {
		t.Errorf("%s exists = %v after %s", file, got, d)
	}
	if d == agent.DecisionApprove {
		h.CheckFile(file, "perm")
	}
	if started := r.Of(agent.EventToolStarted); len(started) != 1 {
		t.Errorf("tool.started %+v", started)
	}
	if completed := r.Of(agent.EventToolCompleted); len(completed) != 1 || completed[0].Tool.IsError != (d == agent.DecisionDecline) {
		t.Errorf("tool.completed %+v", completed)
	}
}

// testFamilyCancel: a cancel in the middle of a streamed answer (at its
// third delta, or once the model request is in flight for a CLI that sends
// the text at the end) ends the run as interrupted, before the stream's end.
func testFamilyCancel(t *testing.T, c familyCLI) {
	arrived := make(chan struct{})
	h := setupFamily(t, c, scene{trigger: "e2e-slow", slow: true, arrived: arrived})
	if h == nil {
		return
	}
	var (
		mu          sync.Mutex
		cancelledAt time.Time
		once        sync.Once
		deltas      int
	)
	stop := func(cancel context.CancelFunc) {
		mu.Lock()
		defer mu.Unlock()
		if cancelledAt.IsZero() {
			cancelledAt = time.Now()
			cancel()
		}
	}
	r := h.Run(agent.RunRequest{Prompt: "e2e-slow: count slowly"}, func(ev agent.Event, cancel context.CancelFunc) {
		if c.buffered {
			once.Do(func() {
				go func() {
					<-arrived
					stop(cancel)
				}()
			})
		}
		if ev.Type == agent.EventAssistantDelta {
			if deltas++; deltas == 3 {
				stop(cancel)
			}
		}
	})
	mu.Lock()
	defer mu.Unlock()
	if cancelledAt.IsZero() {
		t.Fatalf("never saw the third delta; err %v; transcripts:\n%s", r.Err, transcripts(h))
	}
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("Run after cancel = %v, last %+v", r.Err, r.Last())
	}
	t.Logf("cancel → Run returned in %s (%s)", time.Since(cancelledAt).Round(time.Millisecond), r.Last().Text)
	if strings.Contains(r.Text(), providertest.SlowEnd) {
		t.Error("stream ran to the end despite the cancel")
	}
}

// testFamilyCancelTool: a cancel while the shell tool runs (a long sleep,
// approved by the accept policy) ends the run as interrupted, the command
// never finishes, and neither the CLI nor the tool's processes outlive the
// run (found by the run's environment marker, and the tool's shell also by
// a marker in its command line, should a CLI not pass its environment on).
func testFamilyCancelTool(t *testing.T, c familyCLI) {
	marker := providertest.OrphanMarker(strings.ReplaceAll(t.Name(), "/", "-"))
	h := setupFamily(t, c, scene{trigger: "e2e-long", shell: "echo started > started.txt && sleep 300 && echo late > late.txt && : " + marker})
	if h == nil {
		return
	}
	started := h.Path("started.txt")
	var (
		once        sync.Once
		mu          sync.Mutex
		cancelledAt time.Time
	)
	stop := make(chan struct{})
	defer close(stop)
	r := h.Run(agent.RunRequest{Prompt: "e2e-long: run it", Approval: agent.ApprovalAccept}, func(_ agent.Event, cancel context.CancelFunc) {
		once.Do(func() {
			go func() {
				if providertest.WaitFile(started, stop) {
					mu.Lock()
					cancelledAt = time.Now()
					mu.Unlock()
					cancel()
				}
			}()
		})
	})
	mu.Lock()
	defer mu.Unlock()
	if cancelledAt.IsZero() {
		t.Fatalf("the tool never started; Run = %v, last %+v; transcripts:\n%s", r.Err, r.Last(), transcripts(h))
	}
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted {
		t.Fatalf("Run after cancel = %v, last %+v", r.Err, r.Last())
	}
	t.Logf("cancel → Run returned in %s (%s)", time.Since(cancelledAt).Round(time.Millisecond), r.Last().Text)
	if h.Exists("late.txt") {
		t.Error("the command ran to its end despite the cancel")
	}
	providertest.NoOrphans(t, marker)
}

// testFamilyBackground: a finished turn whose shell tool left a process in
// the background (a dev server, say) leaves nothing running after the run.
func testFamilyBackground(t *testing.T, c familyCLI) {
	marker := providertest.OrphanMarker(strings.ReplaceAll(t.Name(), "/", "-"))
	h := setupFamily(t, c, scene{trigger: "e2e-bg", shell: "(sleep 300; : " + marker + ") > /dev/null 2>&1 & echo bg > bg.txt"})
	if h == nil {
		return
	}
	r := h.Run(agent.RunRequest{Prompt: "e2e-bg: run it", Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v; transcripts:\n%s", r.Err, r.Last(), transcripts(h))
	}
	if !h.Exists("bg.txt") {
		t.Fatal("the tool did not run")
	}
	providertest.NoOrphans(t, marker)
}

// testFamilyResume: the second turn loads the first turn's session and the
// model sees the first turn.
func testFamilyResume(t *testing.T, c familyCLI) {
	h := setupFamily(t, c,
		scene{trigger: "e2e-remember", text: []string{"Noted: ", "the word is ", "alpha."}},
		scene{trigger: "e2e-recall", text: []string{"The word ", "was alpha."}},
	)
	if h == nil {
		return
	}
	r1 := h.Run(agent.RunRequest{Prompt: providertest.RememberPrompt}, nil)
	if r1.Err != nil || r1.Last().Type != agent.EventRunCompleted {
		t.Fatalf("run 1 = %v, last %+v; transcripts:\n%s", r1.Err, r1.Last(), transcripts(h))
	}
	sid := r1.SessionID()
	if sid == "" {
		t.Fatal("run 1 reported no session id")
	}
	checkResumed(t, h.Run, sid, h.Fake.transcripts)
}

// checkResumed runs the recall turn on session sid and checks it: it
// completes with the recall text alone (the history session/load replays is
// not emitted again), stays on that session (no session.updated), and the
// model saw the first turn in the recall's request.
func checkResumed(t *testing.T, run providertest.Turn, sid string, transcripts func() []string) {
	t.Helper()
	r2 := run(agent.RunRequest{Prompt: providertest.RecallPrompt, ResumeID: sid}, nil)
	if r2.Err != nil || r2.Last().Type != agent.EventRunCompleted {
		t.Fatalf("run 2 = %v, last %+v", r2.Err, r2.Last())
	}
	if got := r2.Text(); got != providertest.RecallText {
		t.Errorf("run 2 text %q: the replayed history must not be emitted again", got)
	}
	if n := len(r2.Of(agent.EventSessionUpdated)); n != 0 {
		t.Errorf("run 2 moved to another session (%d session.updated)", n)
	}
	trs := transcripts()
	recall := ""
	for _, tr := range trs {
		if strings.Contains(tr, providertest.RecallPrompt) {
			recall = tr
		}
	}
	for _, want := range []string{providertest.RememberPrompt, providertest.RememberText, providertest.RecallPrompt} {
		if !strings.Contains(recall, want) {
			t.Errorf("resumed request lacks %q; transcripts:\n%s", want, strings.Join(trs, "\n---\n"))
		}
	}
}
