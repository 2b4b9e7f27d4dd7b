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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/jsonstream"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// oneShot is a one-shot CLI of this file: where it is, its dialect, the ACP
// definition that writes the configuration it reads, and what else its
// environment and provider need (env, id: "" for the dialect's).
type oneShot struct {
	cli     providertest.CLI
	dialect jsonstream.Dialect
	def     acp.Definition
	id      agent.ProviderID
	env     func(t testing.TB, env map[string]string)
}

var (
	copilot = oneShot{
		cli: providertest.CLI{Name: "copilot", EnvVar: "THREADLINE_COPILOT_BIN"}, dialect: jsonstream.Copilot, def: acp.CopilotACP(),
		env: providertest.SharedCache,
	}
	kilo = oneShot{
		cli: providertest.CLI{Name: "kilo", EnvVar: "THREADLINE_KILO_BIN"}, dialect: jsonstream.Kilo, def: acp.Kilo(),
		id:  agent.ProviderID(descriptor(jsonstream.Kilo).ID),
		env: func(_ testing.TB, env map[string]string) { maps.Copy(env, descriptor(jsonstream.Kilo).Env) },
	}
)

// shellScenarios runs the shell-tool scenarios on o inside the netns: a
// tool call round trip with the accept flag (the file written, the answer,
// nothing left behind; then turn's checks of it), a second turn resuming
// the session (the model sees the first; then resumed's checks), and a
// cancel while a tool runs (interrupted within the grace, nothing left).
func shellScenarios(t *testing.T, o oneShot, turn func(r *providertest.Result), resumed func(first, again *providertest.Result)) {
	t.Helper()
	word := o.cli.Name + "-e2e"
	done, held := providertest.OrphanMarker(o.cli.Name+"-done"), providertest.OrphanMarker(o.cli.Name+"-cancel")
	h := providertest.NewSetup(o.cli, fakeopenai.New, func(h *providertest.Harness[*fakeopenai.Server, *jsonstream.Provider]) *jsonstream.Provider {
		env := acpEnv(t, o.def, h.Fake)
		if o.env != nil {
			o.env(t, env)
		}
		p, err := jsonstream.New(nil, jsonstream.Options{Launch: h.Launch(env, 3*time.Second), Dialect: o.dialect, ID: o.id})
		if err != nil {
			t.Fatal(err)
		}
		return p
	})(t, providertest.ShellScript(word, done), providertest.ResumeScript(), providertest.HangScript(held))
	if h == nil {
		return
	}
	r := providertest.CheckShellTurn(t, h.Run, h.Cwd, word, done)
	if r.SessionID() == "" {
		t.Fatal("first run reported no session")
	}
	if tools := r.Of(agent.EventToolCompleted); len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, word) {
		t.Errorf("tool.completed = %+v", tools)
	}
	turn(r)
	resumed(r, providertest.CheckShellResumed(t, h.Run, h.Cwd, r.SessionID(), providertest.LastTranscript(h.Fake)))
	providertest.CheckShellCancelled(t, h.Prov, h.Cwd, held, 3*time.Second+5*time.Second)
}

// TestCopilotJSONE2E: the shell scenarios (the session resumed with
// --resume); every record the pinned CLI prints is understood, and the
// tool's output streams.
func TestCopilotJSONE2E(t *testing.T) {
	shellScenarios(t, copilot, func(r *providertest.Result) {
		for _, ev := range r.Of(agent.EventProviderNative) { // every record of the pinned CLI is understood
			t.Errorf("unmapped copilot record %s: %s", ev.Native.Kind, ev.Native.Payload)
		}
		if out := r.Of(agent.EventToolOutput); len(out) != 1 || out[0].Text != "copilot-e2e\n" {
			t.Errorf("tool.output = %+v", out)
		}
	}, func(_, _ *providertest.Result) {})
}

// TestCopilotVersionProbe: detection runs the real `copilot --version` and
// finds the verified version.
func TestCopilotVersionProbe(t *testing.T) { checkVersion(t, copilot) }

// TestKiloRunE2E: the shell scenarios; the resumed turn stays on the CLI's
// session. Kilo's config is written as its ACP definition writes it
// (acp.Kilo().Configure).
func TestKiloRunE2E(t *testing.T) {
	shellScenarios(t, kilo, func(*providertest.Result) {}, func(first, again *providertest.Result) {
		if slices.ContainsFunc(again.Of(agent.EventSessionUpdated), func(ev agent.Event) bool { return ev.SessionID != first.SessionID() }) {
			t.Errorf("the resumed run reported another session: %+v", again.Of(agent.EventSessionUpdated))
		}
	})
}

// TestKiloRunVersionProbe: detection runs the real `kilo --version` and finds
// the verified version.
func TestKiloRunVersionProbe(t *testing.T) { checkVersion(t, kilo) }

// checkVersion probes o's descriptor on the real CLI.
func checkVersion(t *testing.T, o oneShot) {
	t.Helper()
	providertest.CheckVersion(t, descriptor(o.dialect), providertest.FindCLI(t, o.cli.Name, o.cli.EnvVar))
}

func descriptor(d jsonstream.Dialect) registry.Definition {
	desc, _ := jsonstream.Descriptor(d)
	return desc
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
