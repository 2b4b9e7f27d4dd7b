// Tests that a model or effort that could read as a flag never reaches argv.

package claude

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

func TestArgsBindValuesToFlags(t *testing.T) {
	t.Parallel()
	args := Args(agent.RunRequest{Model: "claude-sonnet-4-5", Effort: "high"})
	if !slices.Contains(args, "--model=claude-sonnet-4-5") || !slices.Contains(args, "--effort=high") {
		t.Fatalf("args %q do not bind model and effort to their flags", args)
	}
	if slices.Contains(args, "--model") || slices.Contains(args, "--effort") {
		t.Fatalf("args %q carry a bare --model/--effort", args)
	}
}

// TestRunRefusesFlagValues: Run refuses "--auto" (and other flag-like values)
// before anything is started: the CLI (a script that leaves a mark) never runs.
func TestRunRefusesFlagValues(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	mark := filepath.Join(dir, "started")
	bin := filepath.Join(dir, "claude")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\" > "+mark+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	p := New(nil, Options{Launch: procrun.Launch{Bin: bin, HostEnv: func() []string { return []string{"PATH=/usr/bin:/bin"} }}})
	for _, req := range []agent.RunRequest{
		{Prompt: "hi", Model: "--auto"},
		{Prompt: "hi", Model: "-m"},
		{Prompt: "hi", Effort: "--dangerously-skip-permissions"},
		{Prompt: "hi", Model: "sonnet --auto"},
		{Prompt: "hi", Mode: "bypassPermissions"},
	} {
		var events []agent.Event
		err := p.Run(t.Context(), req, func(ev agent.Event) { events = append(events, ev) })
		if !errors.Is(err, agent.ErrInvalidArgValue) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidArgValue", req, err)
		}
		if len(events) != 0 {
			t.Errorf("Run(%+v) emitted %v", req, events)
		}
		if _, err := os.Stat(mark); !os.IsNotExist(err) {
			t.Fatalf("Run(%+v) started the CLI (stat: %v)", req, err)
		}
	}
}
