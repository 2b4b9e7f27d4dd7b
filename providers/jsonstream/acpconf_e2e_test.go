// End-to-end: the real one-shot CLIs whose configuration their ACP
// definition writes, GitHub Copilot (@github/copilot, JSON mode, BYOK
// switches: no GitHub login) and Kilo Code (@kilocode/cli, run mode), both
// pinned in package.json, through the Provider against the scripted Chat
// Completions fake, inside a loopback-only network namespace. Copilot's
// cache, unpacked on first start (235 MB), is shared with the ACP tests and
// the install script.
//
//	THREADLINE_E2E=1 go test -run 'TestCopilotJSONE2E|TestKiloRunE2E' -v ./providers/jsonstream/

package jsonstream_test

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/jsonstream"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// TestCopilotJSONE2E: a shell tool call round trip with the accept flag
// (the file written, the answer, nothing left behind), a second turn
// resuming the session with --resume (the model sees the first), and a
// cancel while a tool runs.
func TestCopilotJSONE2E(t *testing.T) {
	bin := providertest.FindCLI(t, "copilot", "THREADLINE_COPILOT_BIN")
	if !providertest.InNetns(t) {
		return
	}
	done, held := providertest.OrphanMarker("copilot-done"), providertest.OrphanMarker("copilot-cancel")
	fake := fakeopenai.New(t, providertest.ShellScript("copilot-e2e", done), providertest.ResumeScript(), providertest.HangScript(held))
	env := acpEnv(t, acp.CopilotACP(), fake)
	root, err := providertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env["XDG_CACHE_HOME"] = filepath.Join(root, ".cache", "agents-xdg")
	p, err := jsonstream.New(nil, jsonstream.Options{Launch: procrun.Launch{Bin: bin, Env: env, StopGrace: 3 * time.Second}, Dialect: jsonstream.Copilot})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	r := providertest.CheckShellTurn(t, p, work, "copilot-e2e", done)
	if r.SessionID() == "" {
		t.Fatal("first run reported no session")
	}
	for _, ev := range r.Of(agent.EventProviderNative) { // every record of the pinned CLI is understood
		t.Errorf("unmapped copilot record %s: %s", ev.Native.Kind, ev.Native.Payload)
	}
	if out := r.Of(agent.EventToolOutput); len(out) != 1 || out[0].Text != "copilot-e2e\n" {
		t.Errorf("tool.output = %+v", out)
	}
	if tools := r.Of(agent.EventToolCompleted); len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, "copilot-e2e") {
		t.Errorf("tool.completed = %+v", tools)
	}
	providertest.CheckShellResumed(t, p, work, r.SessionID(), providertest.LastTranscript(fake))
	providertest.CheckShellCancelled(t, p, work, held, 3*time.Second+5*time.Second)
}

// TestCopilotVersionProbe: detection runs the real `copilot --version` and
// finds the verified version.
func TestCopilotVersionProbe(t *testing.T) {
	d, _ := jsonstream.Descriptor(jsonstream.Copilot)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "copilot", "THREADLINE_COPILOT_BIN"))
}

// TestKiloRunE2E: a shell tool call round trip (answer, exit 0, no process
// left behind), a second turn resuming the CLI's session (the model sees the
// first), and a cancel while a tool runs (interrupted, nothing left). Kilo's
// config is written as its ACP definition writes it (acp.Kilo().Configure).
func TestKiloRunE2E(t *testing.T) {
	bin := providertest.FindCLI(t, "kilo", "THREADLINE_KILO_BIN")
	if !providertest.InNetns(t) {
		return
	}
	done, held := providertest.OrphanMarker("kilo-run-done"), providertest.OrphanMarker("kilo-run-cancel")
	fake := fakeopenai.New(t, providertest.ShellScript("kilo-e2e", done), providertest.ResumeScript(), providertest.HangScript(held))
	env := acpEnv(t, acp.Kilo(), fake)
	d, _ := jsonstream.Descriptor(jsonstream.Kilo)
	maps.Copy(env, d.Env)
	p, err := jsonstream.New(nil, jsonstream.Options{Launch: procrun.Launch{Bin: bin, Env: env, StopGrace: 3 * time.Second}, Dialect: jsonstream.Kilo, ID: agent.ProviderID(d.ID)})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	r := providertest.CheckShellTurn(t, p, work, "kilo-e2e", done)
	if r.SessionID() == "" {
		t.Fatal("first run reported no session")
	}
	if tools := r.Of(agent.EventToolCompleted); len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, "kilo-e2e") {
		t.Fatalf("tool.completed = %+v", tools)
	}
	again := providertest.CheckShellResumed(t, p, work, r.SessionID(), providertest.LastTranscript(fake))
	if slices.ContainsFunc(again.Of(agent.EventSessionUpdated), func(ev agent.Event) bool { return ev.SessionID != r.SessionID() }) {
		t.Errorf("the resumed run reported another session: %+v", again.Of(agent.EventSessionUpdated))
	}
	providertest.CheckShellCancelled(t, p, work, held, 3*time.Second+5*time.Second)
}

// TestKiloRunVersionProbe: detection runs the real `kilo --version` and finds
// the verified version.
func TestKiloRunVersionProbe(t *testing.T) {
	d, _ := jsonstream.Descriptor(jsonstream.Kilo)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "kilo", "THREADLINE_KILO_BIN"))
}

// acpEnv is the child environment the CLI's ACP definition d configures
// for fake (its config files under a fresh home), with d's offline switches.
func acpEnv(t *testing.T, d acp.Definition, fake *fakeopenai.Server) map[string]string {
	t.Helper()
	env, err := d.Configure(t.TempDir(), acp.Endpoint{OpenAIBaseURL: fake.URL() + "/v1", APIKey: "sk-fake", Model: fakeopenai.DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(env, d.Env)
	return env
}
