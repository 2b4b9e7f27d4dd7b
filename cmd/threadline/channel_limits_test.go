// Tests of the per-channel agents, projects and requester_only settings.

package main

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/configs"
)

// TestAgentLookup: the chat commands' view of one agent, without probing the
// others (and without running a CLI for a free-form or static list).
func TestAgentLookup(t *testing.T) {
	isolate(t)
	cfg, err := configs.Load(writeConfig(t, "agents:\n  mine: {base: claude}\n"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := loadAgents(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	a := &app{cfg: cfg, agents: set, log: slog.New(slog.DiscardHandler)}
	ids := a.AgentIDs()
	if !slices.IsSorted(ids) || !slices.Contains(ids, "claude") || !slices.Contains(ids, "mine") {
		t.Fatalf("AgentIDs = %v", ids)
	}
	if _, ok := a.Agent(t.Context(), "nope"); ok {
		t.Error("an unknown agent was found")
	}
	for id, c := range map[string]struct{ model, effort string }{
		"claude": {"claude-sonnet-4-5-20250929", "max"}, "mine": {"opus", "high"},
	} {
		info, ok := a.Agent(t.Context(), id)
		if !ok || info.Args.CheckModel(c.model) != nil || info.Args.CheckEffort(c.effort) != nil || info.Args.CheckModel("--auto") == nil {
			t.Errorf("%s: %+v", id, info)
		}
	}
	if info, _ := a.Agent(t.Context(), "qoder"); info.Args.CheckModel("gpt-5") == nil || info.Args.CheckModel("lite") != nil {
		t.Errorf("qoder's closed tiers: %+v", info.Args)
	}
	// cursor-agent's closed list comes from its CLI: probed alone (not
	// installed here, so the fallback list).
	if info, _ := a.Agent(t.Context(), "cursor-agent"); info.Args.CheckModel("sonnet-4") != nil || info.Args.CheckModel("made-up") == nil {
		t.Errorf("cursor-agent: %+v", info.Args)
	}
}
