// End-to-end: the real opencode and grok-cli (@vibe-kit/grok-cli) CLIs,
// pinned in package.json, through the Provider against the scripted Chat
// Completions fake, inside a loopback-only network namespace: opencode's
// turn, its resume and a cancel, and model values that would read as flags;
// grok-cli's shell turn, its failures and a cancel.
//
//	THREADLINE_E2E=1 go test -run 'TestOpenCode.*E2E|TestGrokCLI' -v ./providers/jsonstream/

package jsonstream

import (
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// harness is an e2e run of one CLI against the Chat Completions fake.
type harness = providertest.Harness[*fakeopenai.Server, *Provider]

// The CLIs of this file.
var (
	opencodeCLI = providertest.CLI{Name: "opencode", EnvVar: "THREADLINE_OPENCODE_BIN"}
	grokCLI     = providertest.CLI{Name: "grok", EnvVar: "THREADLINE_GROK_CLI_BIN"}
)

// newE2E is the provider of an e2e run.
func newE2E(t *testing.T, opts Options) *Provider {
	t.Helper()
	p, err := New(nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// opencodeRunEnv is the child env of an e2e run: an isolated HOME/XDG tree
// plus the offline switches.
func opencodeRunEnv(home string) map[string]string {
	env := procrun.HomeEnv(home)
	for _, kv := range opencodeEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// opencodeSetup sets a test up (nil in the outer test process, see
// providertest.Setup): opencode configured for the fake answering with
// scripts (opencodeHome), more added to its environment; its processes are
// marked.
func opencodeSetup(t *testing.T, more map[string]string, scripts ...fakeopenai.Script) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("e2e")
	}
	return providertest.NewSetup(opencodeCLI, fakeopenai.New, func(h *harness) *Provider {
		env := opencodeRunEnv(opencodeHome(t, h.Fake.URL()))
		maps.Copy(env, more)
		return newE2E(t, Options{Launch: h.Launch(env, 3*time.Second), Dialect: OpenCode})
	})(t, scripts...)
}

func TestOpenCodeE2E(t *testing.T) {
	// opencode runs each shell command in a session of its own: what the
	// tool leaves behind is found by the run's token (RunTokenEnv).
	left := providertest.OrphanMarker("opencode-run")
	h := opencodeSetup(t, nil,
		providertest.ShellScript("e2e-marker", left), providertest.ResumeScript(),
		fakeopenai.When("Slowly", fakeopenai.WithTools(fakeopenai.Slow(200, 100*time.Millisecond))),
	)
	if h == nil {
		return
	}
	r1 := providertest.CheckShellTurn(t, h.Run, h.Cwd, "e2e-marker", left)
	if r1.Events[0].Type != agent.EventSessionUpdated {
		t.Fatalf("first run events = %v", r1.Types())
	}
	if tools := r1.Of(agent.EventToolCompleted); len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, "e2e-marker") {
		t.Fatalf("tool.completed = %+v", tools)
	}
	// The second turn continues the CLI's own session: the model sees turn one.
	again := providertest.CheckShellResumed(t, h.Run, h.Cwd, r1.SessionID(), providertest.LastTranscript(h.Fake))
	if n := len(again.Of(agent.EventSessionUpdated)); n != 0 {
		t.Errorf("resume reported a new session: %+v", again.Events)
	}

	// Cancelled once its step started (the slow answer streams for 20 s;
	// opencode prints a text part only when it is complete), the run ends
	// with run.interrupted, within the grace.
	providertest.CheckCancelAt(t, h.Run, agent.RunRequest{Prompt: "Slowly"}, func(ev agent.Event) bool {
		return ev.Type == agent.EventSessionUpdated
	}, 3*time.Second+5*time.Second)
}

// askBash makes opencode's bash tool need an approval (print mode cannot
// ask, so the tool is not run unless --auto approves it): opencode merges
// $OPENCODE_PERMISSION into its configuration's permissions.
var askBash = map[string]string{"OPENCODE_PERMISSION": `{"bash":"ask","edit":"ask"}`}

// TestOpenCodeFlagModelE2E: a model value that opencode's parser would read
// as a flag ("--auto": approve every permission) is refused before the real
// opencode starts, and a valid model bound as --model=M still leaves a bash
// tool that policy says must ask unapproved.
func TestOpenCodeFlagModelE2E(t *testing.T) {
	h := opencodeSetup(t, askBash, fakeopenai.When("Touch it", fakeopenai.WithTools(fakeopenai.Shell("touch pwned.txt"))))
	if h == nil {
		return
	}
	// Each run in a directory of its own, to tell whose tool ran.
	run := func(req agent.RunRequest) *providertest.Result {
		h.Cwd, req.Prompt = t.TempDir(), "Touch it"
		return h.Run(req, nil)
	}

	// The chat's model set to "--auto" directly in the request (as if the
	// chat command had been bypassed): refused, nothing starts.
	for _, req := range []agent.RunRequest{{Model: "--auto"}, {Effort: "--auto"}, {Model: "fake/fake-model --auto"}} {
		r := run(req)
		if !errors.Is(r.Err, agent.ErrInvalidArgValue) || len(r.Events) != 0 {
			t.Fatalf("Run(%+v) = %v, events %v; want ErrInvalidArgValue and no event", req, r.Err, r.Types())
		}
		if h.Exists("pwned.txt") {
			t.Fatalf("the bash tool ran for %+v", req)
		}
	}
	if n := len(h.Fake.ChatRequests()); n != 0 {
		t.Fatalf("a refused run reached the model: %d requests", n)
	}

	// A valid model, bound as --model=fake/fake-model, reaches the real
	// opencode and the model; the bash tool that must ask is not run.
	// opencode's print mode auto-rejects the permission (and fails the run).
	r := run(agent.RunRequest{Model: "fake/" + fakeopenai.DefaultModel})
	if r.Err != nil && !errors.Is(r.Err, agent.ErrRunFailed) {
		t.Fatalf("valid model run: %v (events %v)", r.Err, r.Types())
	}
	if len(h.Fake.ChatRequests()) == 0 {
		t.Fatalf("opencode did not call the model with --model=fake/%s", fakeopenai.DefaultModel)
	}
	if h.Exists("pwned.txt") {
		t.Fatalf("the bash tool ran without an approval; events %v", r.Types())
	}
	rejected := false
	for _, ev := range r.Of(agent.EventToolCompleted) {
		if ev.Tool != nil && ev.Tool.IsError {
			rejected = true
		}
	}
	if !rejected {
		t.Fatalf("no rejected tool call in %v", r.Types())
	}

	// Control: the operator's explicit --auto (trusted config args) does
	// approve it, so the run above was held back by the ask policy and not by
	// a broken script.
	r = run(agent.RunRequest{Model: "fake/" + fakeopenai.DefaultModel, Args: []string{"--auto"}})
	if r.Err != nil {
		t.Fatalf("control run: %v", r.Err)
	}
	if !h.Exists("pwned.txt") {
		t.Fatal("control: with the operator's --auto the bash tool did not run: the ask policy test proves nothing")
	}
}

// grokGrace is how long grok-cli has to stop after SIGINT.
const grokGrace = 3 * time.Second

// grokCLISetup sets a test up (nil in the outer test process, see
// providertest.Setup): grok-cli aimed at the fake answering with the test's
// scripts, its processes marked.
var grokCLISetup = providertest.NewSetup(grokCLI, fakeopenai.New, func(h *harness) *Provider {
	env := map[string]string{
		"HOME": h.T.TempDir(), "GROK_BASE_URL": h.Fake.URL() + "/v1", "GROK_API_KEY": "sk-fake", "GROK_MODEL": fakeopenai.DefaultModel,
	}
	providertest.DeadProxy(env)
	return newE2E(h.T, Options{Dialect: GrokCLI, ID: GrokCLIProviderID, Launch: h.Launch(env, grokGrace)})
})

// TestGrokCLIE2E: a turn with a shell tool call: the file is written, the
// tool's output and the final answer come back, the run completes with
// grok-cli's exit status 0, and the process the tool left in the background
// does not outlive the run.
func TestGrokCLIE2E(t *testing.T) {
	h, r := providertest.ShellTurn(t, grokCLISetup, "grok-e2e")
	if h == nil {
		return
	}
	done := r.Of(agent.EventToolCompleted)
	if len(done) != 1 || done[0].Tool.Name != "bash" || strings.TrimSpace(done[0].Tool.Output) != "grok-e2e" {
		t.Errorf("tool.completed = %+v", done)
	}
	reqs := h.Fake.ChatRequests()
	if len(reqs) != 2 || reqs[0].Model != fakeopenai.DefaultModel {
		t.Errorf("%d chat requests, model %q", len(reqs), reqs[0].Model)
	}
}

// TestGrokCLIE2EFailures: a model error (grok-cli exits 0 and prints its
// apology) and a missing key (exit status 1) both fail the run with the
// CLI's text, not as an answer.
func TestGrokCLIE2EFailures(t *testing.T) {
	h := grokCLISetup(t, fakeopenai.When(providertest.BadPrompt, fakeopenai.Error(400, "fake bad request")))
	if h == nil {
		return
	}
	if r := providertest.CheckAPIError(t, h.Run, "fake bad request"); r.Text() != "" {
		t.Errorf("model error: the CLI's apology came as the answer %q", r.Text())
	}
	h.Prov.opts.Env["GROK_API_KEY"] = ""
	r := h.Run(agent.RunRequest{Prompt: providertest.BadPrompt}, nil)
	if pe, ok := procrun.IsExit(r.Err); !ok || pe.ExitCode != 1 || r.Last().Type != agent.EventRunFailed || !strings.Contains(r.Last().Text, "API key required") {
		t.Errorf("no key: Run = %v, last %+v", r.Err, r.Last())
	}
}

// TestGrokCLIE2ECancel: cancelled while its shell tool runs, grok-cli is
// stopped (SIGINT, then its process group killed): run.interrupted within
// the grace, and the tool's process is gone too.
func TestGrokCLIE2ECancel(t *testing.T) {
	providertest.ShellCancel(t, grokCLISetup, grokGrace+5*time.Second)
}

// TestGrokCLIVersionProbe: detection reads the real grok-cli's version from
// its package.json (its --version prints 1.0.1) and finds the verified one.
func TestGrokCLIVersionProbe(t *testing.T) {
	d, _ := Descriptor(GrokCLI)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, grokCLI.Name, grokCLI.EnvVar))
}

// TestE2EAsOrdinaryUser: opencode run, grok, copilot's JSON mode and kilo
// run pass their scenarios sandboxed as an ordinary user too.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^(TestOpenCodeE2E|TestGrokCLIE2E|TestCopilotJSONE2E|TestKiloRunE2E)$")
}
