// End-to-end: the real GitHub Copilot CLI (@github/copilot, pinned in
// package.json) in its JSON mode through the Provider, with its BYOK
// switches (no GitHub login) against the scripted Chat Completions fake,
// inside a loopback-only network namespace. Its config is what its ACP
// definition writes (acp.CopilotACP().Configure); the cache it unpacks on
// first start (235 MB) is shared with the ACP tests and the install script.
//
//	THREADLINE_E2E=1 go test -run 'TestCopilotJSONE2E' -v ./providers/jsonstream/

package jsonstream_test

import (
	"os"
	"path/filepath"
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
	fake := fakeopenai.New(t,
		fakeopenai.When("Run it", fakeopenai.WithTools(fakeopenai.Shell("echo copilot-e2e > out.txt; "+providertest.LeftBehind(done)+"; cat out.txt"))),
		fakeopenai.When("And again", fakeopenai.WithTools(fakeopenai.Text("Second turn answer."))),
		fakeopenai.When("Hang", fakeopenai.WithTools(fakeopenai.Shell(providertest.Holding("started.txt", held)))),
	)
	env := acpEnv(t, acp.CopilotACP(), fake)
	root, err := providertest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	env["XDG_CACHE_HOME"] = filepath.Join(root, ".cache", "agents-xdg")
	p, err := jsonstream.New(nil, jsonstream.Options{Launch: procrun.Launch{Bin: bin, Env: env}, Dialect: jsonstream.Copilot, StopGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	r := providertest.Run(t, p, agent.RunRequest{Prompt: "Run it", Cwd: work, Approval: agent.ApprovalAccept}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted || r.SessionID() == "" {
		t.Fatalf("first run: %v, last %+v, session %q", r.Err, r.Last(), r.SessionID())
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
	if !strings.Contains(r.Text(), "Tool result: copilot-e2e") {
		t.Errorf("answer %q lacks the tool round trip", r.Text())
	}
	if b, err := os.ReadFile(filepath.Join(work, "out.txt")); err != nil || string(b) != "copilot-e2e\n" {
		t.Errorf("out.txt = %q, %v", b, err)
	}
	providertest.NoOrphans(t, done)

	again := providertest.Run(t, p, agent.RunRequest{Prompt: "And again", Cwd: work, ResumeID: r.SessionID()}, nil)
	if again.Err != nil || again.Last().Type != agent.EventRunCompleted || !strings.Contains(again.Text(), "Second turn answer.") {
		t.Fatalf("resumed run: %v, last %+v", again.Err, again.Last())
	}
	if reqs := fake.ChatRequests(); !strings.Contains(reqs[len(reqs)-1].Transcript(), "Run it") {
		t.Errorf("the resumed turn lacks the first:\n%s", reqs[len(reqs)-1].Transcript())
	}

	providertest.CheckCancelled(t, p, agent.RunRequest{Prompt: "Hang", Cwd: work, Approval: agent.ApprovalAccept},
		filepath.Join(work, "started.txt"), held, 3*time.Second+5*time.Second)
}

// TestCopilotVersionProbe: detection runs the real `copilot --version` and
// finds the verified version.
func TestCopilotVersionProbe(t *testing.T) {
	d, _ := jsonstream.Descriptor(jsonstream.Copilot)
	providertest.CheckVersion(t, d, providertest.FindCLI(t, "copilot", "THREADLINE_COPILOT_BIN"))
}
