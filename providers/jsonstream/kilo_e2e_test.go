// End-to-end: the real Kilo Code CLI (@kilocode/cli, pinned in
// package.json) in run mode through the Provider, against the scripted Chat
// Completions fake, inside a loopback-only network namespace. Kilo's config
// is written as its ACP definition writes it (acp.Kilo().Configure).
//
//	THREADLINE_E2E=1 go test -run 'TestKiloRunE2E' -v ./providers/jsonstream/

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

// TestKiloRunE2E: a shell tool call round trip (answer, exit 0, no process
// left behind), a second turn resuming the CLI's session (the model sees the
// first), and a cancel while a tool runs (interrupted, nothing left).
func TestKiloRunE2E(t *testing.T) {
	bin := providertest.FindCLI(t, "kilo", "THREADLINE_KILO_BIN")
	if !providertest.InNetns(t) {
		return
	}
	done, held := providertest.OrphanMarker("kilo-run-done"), providertest.OrphanMarker("kilo-run-cancel")
	fake := fakeopenai.New(t,
		fakeopenai.When("Run it", fakeopenai.WithTools(fakeopenai.Shell("echo kilo-e2e; "+providertest.LeftBehind(done)))),
		fakeopenai.When("And again", fakeopenai.WithTools(fakeopenai.Text("Second turn answer."))),
		fakeopenai.When("Hang", fakeopenai.WithTools(fakeopenai.Shell(providertest.Holding("started.txt", held)))),
	)
	env := acpEnv(t, acp.Kilo(), fake)
	d, _ := jsonstream.Descriptor(jsonstream.Kilo)
	maps.Copy(env, d.Env)
	p, err := jsonstream.New(nil, jsonstream.Options{Launch: procrun.Launch{Bin: bin, Env: env}, Dialect: jsonstream.Kilo, ID: agent.ProviderID(d.ID), StopGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	r := providertest.Run(t, p, agent.RunRequest{Prompt: "Run it", Cwd: work, Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted || r.SessionID() == "" {
		t.Fatalf("first run: %v, last %+v, session %q", r.Err, r.Last(), r.SessionID())
	}
	tools := r.Of(agent.EventToolCompleted)
	if len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, "kilo-e2e") || !strings.Contains(r.Text(), "Tool result: kilo-e2e") {
		t.Fatalf("tool round trip: %+v, text %q", tools, r.Text())
	}
	providertest.NoOrphans(t, done)

	again := providertest.Run(t, p, agent.RunRequest{Prompt: "And again", Cwd: work, ResumeID: r.SessionID()}, nil)
	if again.Err != nil || again.Last().Type != agent.EventRunCompleted || !strings.Contains(again.Text(), "Second turn answer.") {
		t.Fatalf("resumed run: %v, last %+v", again.Err, again.Last())
	}
	if slices.ContainsFunc(again.Of(agent.EventSessionUpdated), func(ev agent.Event) bool { return ev.SessionID != r.SessionID() }) {
		t.Errorf("the resumed run reported another session: %+v", again.Of(agent.EventSessionUpdated))
	}
	if reqs := fake.ChatRequests(); !strings.Contains(reqs[len(reqs)-1].Transcript(), "Run it") {
		t.Errorf("the resumed turn lacks the first:\n%s", reqs[len(reqs)-1].Transcript())
	}

	providertest.CheckCancelled(t, p, agent.RunRequest{Prompt: "Hang", Cwd: work, Approval: agent.ApprovalAccept},
		filepath.Join(work, "started.txt"), held, 3*time.Second+5*time.Second)
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

// TestKiloRunVersionProbe: detection runs the real `kilo --version` and finds
// the verified version.
func TestKiloRunVersionProbe(t *testing.T) {
	d, _ := jsonstream.Descriptor(jsonstream.Kilo)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "kilo", "THREADLINE_KILO_BIN"))
}
