// End-to-end: the real opencode CLI through the Provider, against the fake
// LLM, inside a loopback-only network namespace.

package jsonstream

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

// opencodeRunEnv is the child env of an e2e run: an isolated HOME/XDG tree
// plus the offline switches.
func opencodeRunEnv(home string) map[string]string {
	env := map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME": filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME": filepath.Join(home, ".cache"),
		"XDG_STATE_HOME": filepath.Join(home, ".local", "state"),
	}
	for _, kv := range opencodeEnv {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

func TestOpenCodeE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	if !providertest.InNetns(t) {
		return
	}
	bin := providertest.FindCLI(t, "opencode", "THREADLINE_OPENCODE_BIN")
	// opencode runs each shell command in a session of its own: what the
	// tool leaves behind is found by the run's token (RunTokenEnv).
	left := providertest.OrphanMarker("opencode-run")
	fake := fakeopenai.New(t,
		fakeopenai.When("Run it", fakeopenai.WithTools(fakeopenai.Shell("echo e2e-marker; "+providertest.LeftBehind(left)))),
		fakeopenai.When("And again", fakeopenai.WithTools(fakeopenai.Text("Second turn answer."))),
		fakeopenai.When("Slowly", fakeopenai.WithTools(fakeopenai.Slow(200, 100*time.Millisecond))),
	)
	home := opencodeHome(t, fake.URL())
	p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: opencodeRunEnv(home)}, Dialect: OpenCode, StopGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()

	run := func(ctx context.Context, req agent.RunRequest) ([]agent.Event, error) {
		var evs []agent.Event
		req.Cwd = work
		err := p.Run(ctx, req, func(ev agent.Event) {
			evs = append(evs, ev)
			t.Logf("event %s %.120q", ev.Type, ev.Text)
		})
		return evs, err
	}

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	evs, err := run(ctx, agent.RunRequest{Prompt: "Run it"})
	if err != nil {
		t.Fatalf("first run: %v", err)
	}
	if terminal(t, evs).Type != agent.EventRunCompleted || evs[0].Type != agent.EventSessionUpdated {
		t.Fatalf("first run events = %v", types(evs))
	}
	session := evs[0].SessionID
	providertest.NoOrphans(t, left)
	var out string
	for _, e := range evs {
		if e.Type == agent.EventToolCompleted {
			out = e.Tool.Output
		}
	}
	if !strings.Contains(out, "e2e-marker") || !strings.Contains(text(evs, agent.EventAssistantDelta), "Tool result: e2e-marker") {
		t.Fatalf("tool round trip missing: output %q, text %q", out, text(evs, agent.EventAssistantDelta))
	}

	// The second turn continues the CLI's own session: the model sees turn one.
	evs, err = run(ctx, agent.RunRequest{Prompt: "And again", ResumeID: session})
	if err != nil || terminal(t, evs).Type != agent.EventRunCompleted {
		t.Fatalf("resumed run: %v %v", err, types(evs))
	}
	if slices.Contains(types(evs), agent.EventSessionUpdated) {
		t.Errorf("resume reported a new session: %+v", evs)
	}
	reqs := fake.ChatRequests()
	if last := reqs[len(reqs)-1]; !strings.Contains(last.Transcript(), "Run it") {
		t.Errorf("resumed turn lacks the first turn:\n%s", last.Transcript())
	}

	// Cancelled once its step started (the slow answer streams for 20 s;
	// opencode prints a text part only when it is complete), the run ends
	// with run.interrupted, within the grace.
	var cancelled time.Time
	r := providertest.Run(t, p, agent.RunRequest{Prompt: "Slowly", Cwd: work}, func(ev agent.Event, cancel context.CancelFunc) {
		if ev.Type == agent.EventSessionUpdated && cancelled.IsZero() {
			cancelled = time.Now()
			cancel()
		}
	})
	if r.Err != nil || r.Last().Type != agent.EventRunInterrupted || cancelled.IsZero() {
		t.Fatalf("cancelled run: %v, last %+v", r.Err, r.Last())
	}
	took := time.Since(cancelled)
	t.Logf("the cancel took %s", took.Round(time.Millisecond))
	if took > providertest.Scale(3*time.Second+5*time.Second) {
		t.Errorf("the cancel took %s", took)
	}
}
