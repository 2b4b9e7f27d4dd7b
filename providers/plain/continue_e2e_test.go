// End-to-end: the real Continue CLI (`cn`, @continuedev/cli pinned in
// package.json) through the Provider, against the scripted Chat Completions
// fake, inside a loopback-only network namespace.
//
//	THREADLINE_E2E=1 go test -run 'TestContinueE2E' -v ./providers/plain/

package plain

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// continueSetup returns a Continue provider whose config names the fake as
// its model (nil in the outer process: the test ran in the netns child),
// and a fresh work directory.
func continueSetup(t *testing.T, scripts ...fakeopenai.Script) (*Provider, string) {
	t.Helper()
	bin := providertest.FindCLI(t, "cn", "THREADLINE_CONTINUE_BIN")
	if !providertest.InNetns(t) {
		return nil, ""
	}
	fake := fakeopenai.New(t, scripts...)
	home := t.TempDir()
	config := strings.Join([]string{
		"name: threadline-e2e", "version: 0.0.1", "schema: v1", "models:",
		"  - name: fake", "    provider: openai", "    model: " + fakeopenai.DefaultModel,
		"    apiBase: " + fake.URL() + "/v1", "    apiKey: sk-fake",
		"    roles: [chat, edit, apply]", "    capabilities: [tool_use]", "",
	}, "\n")
	if err := os.MkdirAll(filepath.Join(home, ".continue"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".continue", "config.yaml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	d, _ := Descriptor(Continue)
	env := maps.Clone(d.Env)
	maps.Copy(env, map[string]string{"HOME": home,
		// Anything but the fake fails at once (cn honours the proxy variables).
		"HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "127.0.0.1"})
	p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: env, StopGrace: 3 * time.Second}, CLI: Continue})
	if err != nil {
		t.Fatal(err)
	}
	return p, t.TempDir()
}

// TestContinueE2E: a turn with a shell tool call: the file is written, the
// final answer (the only thing cn prints) carries the tool's result, the run
// completes with exit status 0, and the process the tool left in the
// background does not outlive the run.
func TestContinueE2E(t *testing.T) {
	marker := providertest.OrphanMarker("continue-done")
	p, work := continueSetup(t, providertest.ShellScript("cn-e2e", marker))
	if p == nil {
		return
	}
	providertest.CheckShellTurn(t, p, work, "cn-e2e", marker)
}

// TestContinueE2EFailure: a model error the CLI does not retry makes cn exit
// with status 1: the run fails with that status and the CLI's message.
func TestContinueE2EFailure(t *testing.T) {
	p, work := continueSetup(t, fakeopenai.When("Fail it", fakeopenai.Error(400, "fake bad request")))
	if p == nil {
		return
	}
	r := providertest.Run(t, p, agent.RunRequest{Prompt: "Fail it", Cwd: work}, nil)
	pe, ok := procrun.IsExit(r.Err)
	if !ok || pe.ExitCode != 1 || r.Last().Type != agent.EventRunFailed || !strings.Contains(r.Last().Text, "fake bad request") {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
}

// TestContinueE2ECancel: cancelled while its shell tool runs, cn is stopped
// (SIGINT, then its process group killed): run.interrupted within the grace,
// and the tool's process is gone too.
func TestContinueE2ECancel(t *testing.T) {
	marker := providertest.OrphanMarker("continue-cancel")
	p, work := continueSetup(t, providertest.HangScript(marker))
	if p == nil {
		return
	}
	providertest.CheckShellCancelled(t, p, work, marker, p.opts.StopGrace+5*time.Second)
}

// TestContinueVersionProbe: detection runs the real `cn --version` and
// finds the verified version.
func TestContinueVersionProbe(t *testing.T) {
	d, _ := Descriptor(Continue)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "cn", "THREADLINE_CONTINUE_BIN"))
}
