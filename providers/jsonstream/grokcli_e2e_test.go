// End-to-end: the real grok-cli (@vibe-kit/grok-cli, pinned in package.json)
// through the Provider, against the scripted Chat Completions fake, inside a
// loopback-only network namespace.
//
//	THREADLINE_E2E=1 go test -run 'TestGrokCLIE2E' -v ./providers/jsonstream/

package jsonstream

import (
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// grokCLISetup returns a grok-cli provider aimed at fake (nil in the outer
// process: the test ran in the netns child) and a fresh work directory.
func grokCLISetup(t *testing.T, key string, scripts ...fakeopenai.Script) (*Provider, *fakeopenai.Server, string) {
	t.Helper()
	bin := providertest.FindCLI(t, "grok", "THREADLINE_GROK_CLI_BIN")
	if !providertest.InNetns(t) {
		return nil, nil, ""
	}
	fake := fakeopenai.New(t, scripts...)
	env := map[string]string{
		"HOME": t.TempDir(), "GROK_BASE_URL": fake.URL() + "/v1", "GROK_API_KEY": key, "GROK_MODEL": fakeopenai.DefaultModel,
		"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9",
	}
	p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: env, StopGrace: 3 * time.Second}, Dialect: GrokCLI, ID: GrokCLIProviderID})
	if err != nil {
		t.Fatal(err)
	}
	return p, fake, t.TempDir()
}

// TestGrokCLIE2E: a turn with a shell tool call: the file is written, the
// tool's output and the final answer come back, the run completes with
// grok-cli's exit status 0, and the process the tool left in the background
// does not outlive the run.
func TestGrokCLIE2E(t *testing.T) {
	marker := providertest.OrphanMarker("grok-cli-done")
	p, fake, work := grokCLISetup(t, "sk-fake", providertest.ShellScript("grok-e2e", marker))
	if p == nil {
		return
	}
	r := providertest.CheckShellTurn(t, p, work, "grok-e2e", marker)
	done := r.Of(agent.EventToolCompleted)
	if len(done) != 1 || done[0].Tool.Name != "bash" || strings.TrimSpace(done[0].Tool.Output) != "grok-e2e" {
		t.Errorf("tool.completed = %+v", done)
	}
	reqs := fake.ChatRequests()
	if len(reqs) != 2 || reqs[0].Model != fakeopenai.DefaultModel {
		t.Errorf("%d chat requests, model %q", len(reqs), reqs[0].Model)
	}
}

// TestGrokCLIE2EFailures: a model error (grok-cli exits 0 and prints its
// apology) and a missing key (exit status 1) both fail the run with the
// CLI's text, not as an answer.
func TestGrokCLIE2EFailures(t *testing.T) {
	p, _, work := grokCLISetup(t, "sk-fake", fakeopenai.When("Fail it", fakeopenai.Error(400, "fake bad request")))
	if p == nil {
		return
	}
	r := providertest.Run(t, p, agent.RunRequest{Prompt: "Fail it", Cwd: work}, nil)
	if r.Err == nil || r.Last().Type != agent.EventRunFailed || !strings.Contains(r.Last().Text, "fake bad request") || r.Text() != "" {
		t.Errorf("model error: Run = %v, last %+v, text %q", r.Err, r.Last(), r.Text())
	}
	p.opts.Env["GROK_API_KEY"] = ""
	r = providertest.Run(t, p, agent.RunRequest{Prompt: "Fail it", Cwd: work}, nil)
	if pe, ok := procrun.IsExit(r.Err); !ok || pe.ExitCode != 1 || r.Last().Type != agent.EventRunFailed || !strings.Contains(r.Last().Text, "API key required") {
		t.Errorf("no key: Run = %v, last %+v", r.Err, r.Last())
	}
}

// TestGrokCLIE2ECancel: cancelled while its shell tool runs, grok-cli is
// stopped (SIGINT, then its process group killed): run.interrupted within
// the grace, and the tool's process is gone too.
func TestGrokCLIE2ECancel(t *testing.T) {
	marker := providertest.OrphanMarker("grok-cli-cancel")
	p, _, work := grokCLISetup(t, "sk-fake", providertest.HangScript(marker))
	if p == nil {
		return
	}
	providertest.CheckShellCancelled(t, p, work, marker, p.opts.StopGrace+5*time.Second)
}

// TestGrokCLIVersionProbe: detection reads the real grok-cli's version from
// its package.json (its --version prints 1.0.1) and finds the verified one.
func TestGrokCLIVersionProbe(t *testing.T) {
	d, _ := Descriptor(GrokCLI)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "grok", "THREADLINE_GROK_CLI_BIN"))
}
