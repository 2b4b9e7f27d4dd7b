// End-to-end: the real opencode CLI through the Provider, against the fake
// LLM, inside a loopback-only network namespace: a turn, its resume and a
// cancel; model values that would read as flags.

package jsonstream

import (
	"context"
	"encoding/json"
	"errors"
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

// opencodeProvider is the opencode provider of an e2e run configured under
// home (opencodeHome).
func opencodeProvider(t *testing.T, home string) *Provider {
	t.Helper()
	bin := providertest.FindCLI(t, "opencode", "THREADLINE_OPENCODE_BIN")
	p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: opencodeRunEnv(home), StopGrace: 3 * time.Second}, Dialect: OpenCode})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestOpenCodeE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	if !providertest.InNetns(t) {
		return
	}
	// opencode runs each shell command in a session of its own: what the
	// tool leaves behind is found by the run's token (RunTokenEnv).
	left := providertest.OrphanMarker("opencode-run")
	fake := fakeopenai.New(t,
		providertest.ShellScript("e2e-marker", left), providertest.ResumeScript(),
		fakeopenai.When("Slowly", fakeopenai.WithTools(fakeopenai.Slow(200, 100*time.Millisecond))),
	)
	p := opencodeProvider(t, opencodeHome(t, fake.URL()))
	work := t.TempDir()

	r1 := providertest.CheckShellTurn(t, p, work, "e2e-marker", left)
	if r1.Events[0].Type != agent.EventSessionUpdated {
		t.Fatalf("first run events = %v", r1.Types())
	}
	if tools := r1.Of(agent.EventToolCompleted); len(tools) != 1 || !strings.Contains(tools[0].Tool.Output, "e2e-marker") {
		t.Fatalf("tool.completed = %+v", tools)
	}
	// The second turn continues the CLI's own session: the model sees turn one.
	again := providertest.CheckShellResumed(t, p, work, r1.SessionID(), providertest.LastTranscript(fake))
	if n := len(again.Of(agent.EventSessionUpdated)); n != 0 {
		t.Errorf("resume reported a new session: %+v", again.Events)
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

// askBash makes opencode's bash tool need an approval (print mode cannot ask,
// so the tool is not run unless --auto approves it).
func askBash(t *testing.T, home string) {
	t.Helper()
	path := filepath.Join(home, ".config", "opencode", "opencode.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["permission"] = map[string]any{"bash": "ask", "edit": "ask"}
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOpenCodeFlagModelE2E: a model value that opencode's parser would read
// as a flag ("--auto": approve every permission) is refused before the real
// opencode starts, and a valid model bound as --model=M still leaves a bash
// tool that policy says must ask unapproved.
func TestOpenCodeFlagModelE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	if !providertest.InNetns(t) {
		return
	}
	fake := fakeopenai.New(t, fakeopenai.When("Touch it", fakeopenai.WithTools(fakeopenai.Shell("touch pwned.txt"))))
	home := opencodeHome(t, fake.URL())
	askBash(t, home)
	p := opencodeProvider(t, home)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	run := func(req agent.RunRequest) ([]agent.Event, string, error) {
		work := t.TempDir()
		req.Cwd, req.Prompt = work, "Touch it"
		var evs []agent.Event
		err := p.Run(ctx, req, func(ev agent.Event) {
			evs = append(evs, ev)
			t.Logf("event %s %.120q", ev.Type, ev.Text)
		})
		return evs, filepath.Join(work, "pwned.txt"), err
	}

	// The chat's model set to "--auto" directly in the request (as if the
	// chat command had been bypassed): refused, nothing starts.
	for _, req := range []agent.RunRequest{{Model: "--auto"}, {Effort: "--auto"}, {Model: "fake/fake-model --auto"}} {
		evs, marker, err := run(req)
		if !errors.Is(err, agent.ErrInvalidArgValue) || len(evs) != 0 {
			t.Fatalf("Run(%+v) = %v, events %v; want ErrInvalidArgValue and no event", req, err, types(evs))
		}
		if _, err := os.Stat(marker); !os.IsNotExist(err) {
			t.Fatalf("the bash tool ran for %+v (stat %v)", req, err)
		}
	}
	if n := len(fake.ChatRequests()); n != 0 {
		t.Fatalf("a refused run reached the model: %d requests", n)
	}

	// A valid model, bound as --model=fake/fake-model, reaches the real
	// opencode and the model; the bash tool that must ask is not run.
	// opencode's print mode auto-rejects the permission (and fails the run).
	evs, marker, err := run(agent.RunRequest{Model: "fake/" + fakeopenai.DefaultModel})
	if err != nil && !errors.Is(err, agent.ErrRunFailed) {
		t.Fatalf("valid model run: %v (events %v)", err, types(evs))
	}
	if len(fake.ChatRequests()) == 0 {
		t.Fatalf("opencode did not call the model with --model=fake/%s", fakeopenai.DefaultModel)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the bash tool ran without an approval (stat %v); events %v", err, types(evs))
	}
	rejected := false
	for _, ev := range evs {
		if ev.Type == agent.EventToolCompleted && ev.Tool != nil && ev.Tool.IsError {
			rejected = true
		}
	}
	if !rejected {
		t.Fatalf("no rejected tool call in %v", types(evs))
	}

	// Control: the operator's explicit --auto (trusted config args) does
	// approve it, so the run above was held back by the ask policy and not by
	// a broken script.
	_, marker, err = run(agent.RunRequest{Model: "fake/" + fakeopenai.DefaultModel, Args: []string{"--auto"}})
	if err != nil {
		t.Fatalf("control run: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("control: with the operator's --auto the bash tool did not run (%v): the ask policy test proves nothing", err)
	}
}
