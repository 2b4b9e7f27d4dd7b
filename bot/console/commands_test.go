package console_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/bot/console"
)

// catalog is a console.AgentCatalog of fixed reports.
type catalog []registry.Report

func (c catalog) Probe(context.Context, *slog.Logger) []registry.Report { return c }

func (c catalog) ProbeOne(_ context.Context, id string, _ *slog.Logger) (registry.Report, bool) {
	for _, r := range c {
		if r.ID == id {
			return r, true
		}
	}
	return registry.Report{}, false
}

// testCatalog: fake lists its models live, free cannot list them (a
// fallback list), other is not installed, amp is found but this build cannot
// run it, broken fails its probe.
var testCatalog = catalog{
	{ID: "fake", Status: registry.StatusReady, Models: []string{"m1", "m2"}, ModelSource: registry.ModelsLive},
	{ID: "free", Status: registry.StatusReady, Models: []string{"f1"}, ModelSource: registry.ModelsFallback, ModelsFreeForm: true},
	{ID: "other", Status: registry.StatusMissing, InstallHint: "npm install -g other-cli"},
	{ID: "amp", Status: registry.StatusReady, Problems: []string{"detected only: no runner for this agent in this build: amp"}},
	{ID: "broken", Status: registry.StatusBroken, Problems: []string{"version probe failed: exit status 1"}},
}

// TestConsoleSettingsCommands: /agent refuses an agent that is not installed
// or not ready, naming the ready ones; /model refuses a model the agent does
// not list when it lists them, and takes any (saying so) when it cannot;
// /status shows agent, model, effort and the native session; /queue answers
// in the terminal (nothing queued when idle).
func TestConsoleSettingsCommands(t *testing.T) {
	s, chat := stack(t)
	if err := s.St.SetSession(t.Context(), string(chat), "fake", "sess-0042"); err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		"/agent codex", "/agent other", "/agent amp", "/agent broken",
		"/model nosuchmodel", "/model m2", "/effort high", "/status", "/queue", "/queue clear",
		"/agent free", "/model anything-goes", "/status",
	}, "\n") + "\n"
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader(in), Out: &out, By: "console:t", History: "-",
		Agents: testCatalog, Sessions: s.St}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, want := range []string{
		"There is no such agent here. Valid agents: fake, free, other, amp, broken. Ready here: fake, free. Nothing was changed.",
		"other is not installed (install: npm install -g other-cli). Ready here: fake, free. Nothing was changed.",
		"amp is not ready here: detected only: no runner for this agent in this build: amp. Ready here: fake, free.",
		"broken is not ready here: version probe failed: exit status 1. Ready here: fake, free.",
		"fake does not list model nosuchmodel; nothing was changed. Its models: m1, m2.",
		"model set to m2 for this chat.",
		"effort set to high",
		"agent fake · model m2",
		"effort high · session sess-0042",
		"Nothing is queued: a message typed while a turn runs waits here",
		"Nothing is queued.",
		"agent set to free for this chat.",
		"model set to anything-goes for this chat. (free does not list its models here, so anything-goes was taken as given",
		"agent free · model anything-goes",
		"effort high · session (none yet)",
	} {
		waitOut(t, &out, &seen, want)
	}
	c, err := s.Bot.Chat(t.Context(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent != "free" || c.Model != "anything-goes" {
		t.Errorf("chat agent %q model %q", c.Agent, c.Model)
	}
}
