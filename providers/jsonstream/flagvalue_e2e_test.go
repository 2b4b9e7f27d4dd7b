// End-to-end: a model value that opencode's parser would read as a flag
// ("--auto": approve every permission) is refused before the real opencode
// starts, and a valid model bound as --model=M still leaves a bash tool that
// policy says must ask unapproved.

package jsonstream

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/providers/providertest/fakeopenai"
)

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

func TestOpenCodeFlagModelE2E(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e")
	}
	if !providertest.InNetns(t) {
		return
	}
	bin := providertest.FindCLI(t, "opencode", "THREADLINE_OPENCODE_BIN")
	fake := fakeopenai.New(t, fakeopenai.When("Touch it", fakeopenai.WithTools(fakeopenai.Shell("touch pwned.txt"))))
	home := opencodeHome(t, fake.URL())
	askBash(t, home)
	p, err := New(nil, Options{Launch: procrun.Launch{Bin: bin, Env: opencodeRunEnv(home)}, Dialect: OpenCode, StopGrace: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
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
