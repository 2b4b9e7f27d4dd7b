// Tests of the per-channel agents, projects and requester_only settings.

package main

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
)

func TestChannelLimitsConfig(t *testing.T) {
	cfg, err := configs.Load(writeConfig(t, `slack:
  bot_token: xoxb-1
  app_token: xapp-1-abc
  workspace: {allow: ["*"], requester_only: true}
  channels:
    C1: {agent: claude, agents: [claude, codex], projects: [web], allow: [U1], approvers: [U1]}
matrix:
  homeserver: http://127.0.0.1:8008
  user_id: "@bot:example.org"
  access_token: t
  rooms:
    "!r:example.org": {agents: [opencode], projects: [api], requester_only: true}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := (&app{cfg: cfg}).policy()
	r := p.Channel(chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1"})
	if strings.Join(r.Agents, ",") != "claude,codex" || strings.Join(r.Projects, ",") != "web" || !r.RequesterOnly || r.Agent != "claude" {
		t.Errorf("slack C1 rules %+v", r)
	}
	if !p.Allowed(chatops.User{Platform: "slack", ID: "U1"}, chatops.Place{Platform: "slack", Channel: "C1"}, chatops.ActConfigure) {
		t.Error("the channel's approver may not configure")
	}
	m := p.Channel(chatops.Place{Platform: "matrix", Channel: "!r:example.org"})
	if strings.Join(m.Agents, ",") != "opencode" || strings.Join(m.Projects, ",") != "api" || !m.RequesterOnly {
		t.Errorf("matrix room rules %+v", m)
	}
	for body, want := range map[string]string{
		"slack: {bot_token: x, app_token: y, channels: {C1: {agent: claude, agents: [codex]}}}\n": `the default agent "claude" is not in its agents list`,
		"slack: {bot_token: x, app_token: y, channels: {C1: {project: web, projects: [api]}}}\n":  `the default project "web" is not in its projects list`,
		"slack: {bot_token: x, app_token: y, channels: {C1: {agents: [\"--auto\"]}}}\n":           "slack.channels.C1.agents: invalid value",
		"slack: {bot_token: x, app_token: y, workspace: {projects: [\"a b\"]}}\n":                 "slack.workspace.projects: invalid value",
	} {
		if _, err := configs.Load(writeConfig(t, body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

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
