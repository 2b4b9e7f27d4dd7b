// End-to-end: the real Continue CLI (`cn`, @continuedev/cli pinned in
// package.json) through the Provider, against the scripted Chat Completions
// fake, inside a loopback-only network namespace.
//
//	THREADLINE_E2E=1 go test -run 'TestContinueE2E' -v ./providers/plain/

package plain

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// harness is an e2e run of Continue against the Chat Completions fake.
type harness = providertest.Harness[*fakeopenai.Server, *Provider]

var continueCLI = providertest.CLI{Name: "cn", EnvVar: "THREADLINE_CONTINUE_BIN"}

// continueGrace is how long cn has to stop after SIGINT.
const continueGrace = 3 * time.Second

// continueSetup sets a test up (nil in the outer test process, see
// providertest.Setup): a Continue provider whose config names the fake
// answering with the test's scripts as its model, its processes marked.
var continueSetup = providertest.NewSetup(continueCLI, fakeopenai.New, func(h *harness) *Provider {
	home := h.T.TempDir()
	providertest.WriteFile(h.T, home, ".continue/config.yaml", strings.Join([]string{
		"name: threadline-e2e", "version: 0.0.1", "schema: v1", "models:",
		"  - name: fake", "    provider: openai", "    model: " + fakeopenai.DefaultModel,
		"    apiBase: " + h.Fake.URL() + "/v1", "    apiKey: sk-fake",
		"    roles: [chat, edit, apply]", "    capabilities: [tool_use]", "",
	}, "\n"))
	d, _ := Descriptor(Continue)
	env := maps.Clone(d.Env)
	// Anything but the fake fails at once (cn honours the proxy variables).
	env["HOME"], env["NO_PROXY"] = home, "127.0.0.1"
	providertest.DeadProxy(env)
	p, err := New(nil, Options{Launch: h.Launch(env, continueGrace), CLI: Continue})
	if err != nil {
		h.T.Fatal(err)
	}
	return p
})

// TestContinueE2E: a turn with a shell tool call: the file is written, the
// final answer (the only thing cn prints) carries the tool's result, the run
// completes with exit status 0, and the process the tool left in the
// background does not outlive the run.
func TestContinueE2E(t *testing.T) {
	providertest.ShellTurn(t, continueSetup, "cn-e2e")
}

// TestContinueE2EFailure: a model error the CLI does not retry makes cn exit
// with status 1: the run fails with that status and the CLI's message.
func TestContinueE2EFailure(t *testing.T) {
	h := continueSetup(t, fakeopenai.When(providertest.BadPrompt, fakeopenai.Error(400, "fake bad request")))
	if h == nil {
		return
	}
	r := providertest.CheckAPIError(t, h.Run, "fake bad request")
	if pe, ok := procrun.IsExit(r.Err); !ok || pe.ExitCode != 1 {
		t.Errorf("Run = %v, want exit status 1", r.Err)
	}
}

// TestContinueE2ECancel: cancelled while its shell tool runs, cn is stopped
// (SIGINT, then its process group killed): run.interrupted within the grace,
// and the tool's process is gone too.
func TestContinueE2ECancel(t *testing.T) {
	providertest.ShellCancel(t, continueSetup, continueGrace+5*time.Second)
}

// TestContinueVersionProbe: detection runs the real `cn --version` and
// finds the verified version.
func TestContinueVersionProbe(t *testing.T) {
	d, _ := Descriptor(Continue)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, continueCLI.Name, continueCLI.EnvVar))
}

// TestE2EAsOrdinaryUser: cn passes its scenario sandboxed as an ordinary
// user too.
func TestE2EAsOrdinaryUser(t *testing.T) {
	providertest.AsOrdinaryUser(t, "^TestContinueE2E$")
}
