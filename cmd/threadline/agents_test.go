package main

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/configs"
)

func TestLoadAgents(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	set, err := loadAgents(&configs.Config{Agents: map[string]configs.AgentConfig{
		"claude": {Bin: "/opt/claude", Args: []string{"--foo"}, Env: map[string]string{"K": "V"}, Model: "sonnet"},
		"fast":   {Base: "claude", Model: "haiku"},
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	if c := set.Configs["fast"]; c.Provider != "claude" || c.Model != "haiku" {
		t.Errorf("profile fast: %+v", c)
	}
	if c := set.Configs["claude"]; c.Provider != "claude" || c.Bin != "/opt/claude" || !slices.Equal(c.Args, []string{"--foo"}) || c.Env["K"] != "V" || c.Model != "sonnet" {
		t.Errorf("claude override: %+v", c)
	}
	// Every built-in has a provider, except those whose CLI speaks a format no
	// provider here was verified against.
	var runnable []string
	for _, p := range set.Providers {
		runnable = append(runnable, string(p.ID()))
	}
	for _, b := range builtinTable() {
		if d := b.desc; !slices.Contains(runnable, d.ID) && set.NoRunner[d.ID] == nil {
			t.Errorf("%s: neither a provider nor a reason", d.ID)
		}
	}
	for _, id := range []string{"claude", "codex", "minimax", "opencode", "opencode-run", "gemini", "qwen", "kimi", "cursor-agent", "antigravity", "aider", "pi"} {
		if !slices.Contains(runnable, id) {
			t.Errorf("no provider for %s (%v)", id, set.NoRunner[id])
		}
	}
	if _, _, err := set.Launch("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch"`) {
		t.Errorf("launch(nosuch): %v", err)
	}
	if _, _, err := set.Launch("amp"); err == nil || !strings.Contains(err.Error(), "no runner") {
		t.Errorf("launch(amp): %v", err)
	}
}

func TestLoadAgentsRejectsBadProfiles(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	for name, tc := range map[string]struct {
		agents map[string]configs.AgentConfig
		want   string
	}{
		"replace a built-in": {map[string]configs.AgentConfig{"claude": {Base: "codex"}}, "claude"},
		"unknown base":       {map[string]configs.AgentConfig{"mine": {Base: "nosuch"}}, "nosuch"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadAgents(&configs.Config{Agents: tc.agents}, log)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

func TestAgentsCommand(t *testing.T) {
	isolate(t)
	code, out, _, err := run(t, "", "agents", "--all")
	if code != 0 || err != nil {
		t.Fatalf("agents: %d %v", code, err)
	}
	for _, want := range []string{"claude", "opencode", "npm install -g @anthropic-ai/claude-code"} {
		if !strings.Contains(out, want) {
			t.Errorf("agents --all lacks %q:\n%s", want, out)
		}
	}
	code, out, _, err = run(t, "", "agents", "--json")
	if code != 0 || err != nil || !strings.HasPrefix(strings.TrimSpace(out), "[") || !strings.Contains(out, `"id": "claude"`) {
		t.Fatalf("agents --json: %d %v\n%s", code, err, out)
	}
}
