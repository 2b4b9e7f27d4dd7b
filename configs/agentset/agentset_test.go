package agentset

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/providers/acp"
	"github.com/threadline-bot/threadline/providers/claude"
)

// TestLoad: profiles over built-ins, the prompt configs, launch resolution
// (unknown, no runner, an executable on disk), the default order and the
// probe's "detected only" note.
func TestLoad(t *testing.T) {
	builtins, err := registry.Builtins(claude.Descriptor(), acp.Gemini().Descriptor)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &configs.Config{Agents: map[string]configs.AgentConfig{
		"claude": {Bin: "/bin/true", Model: "sonnet"},
		"fast":   {Base: "claude", Model: "haiku"},
	}}
	noGemini := errors.New("no runner for gemini here")
	runners := func(*slog.Logger) ([]agent.Provider, map[string]error) {
		return nil, map[string]error{"gemini": noGemini}
	}
	s, err := Load(cfg, builtins, runners, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Configs["fast"]; c.Provider != "claude" || c.Model != "haiku" || c.IdleTimeout != configs.DefaultIdleTimeout {
		t.Errorf("fast = %+v", c)
	}
	if got := s.IDs(); !slices.Equal(got, []string{"claude", "fast", "gemini"}) {
		t.Errorf("IDs = %v", got)
	}
	if _, bin, err := s.Launch("claude"); err != nil || bin != "/bin/true" {
		t.Errorf("Launch(claude) = %q, %v", bin, err)
	}
	if _, _, err := s.Launch("nosuch"); err == nil || !strings.Contains(err.Error(), `unknown agent "nosuch"`) {
		t.Errorf("Launch(nosuch): %v", err)
	}
	if _, _, err := s.Launch("gemini"); !errors.Is(err, noGemini) {
		t.Errorf("Launch(gemini): %v", err)
	}
	if got := s.First([]string{"gemini", "fast", "claude"}); got != "fast" {
		t.Errorf("First = %q, want fast", got)
	}
	if got, err := s.Default(""); err != nil || got != "claude" {
		t.Errorf("Default() = %q, %v; want claude (first of DefaultOrder that runs)", got, err)
	}
	if got, _ := s.Default("fast"); got != "fast" {
		t.Errorf("Default(fast) = %q", got)
	}
	if got := s.Runnable(); !slices.Contains(got, "claude") || slices.Contains(got, "gemini") {
		t.Errorf("Runnable = %v", got)
	}
	s.Prober = func(_ context.Context, defs []registry.Definition, _ registry.ProbeOptions) []registry.Report {
		out := make([]registry.Report, len(defs))
		for i, d := range defs {
			out[i] = registry.Report{ID: d.ID, Base: d.Base}
		}
		return out
	}
	for _, r := range s.Probe(t.Context(), slog.New(slog.DiscardHandler)) {
		detectedOnly := slices.ContainsFunc(r.Problems, func(p string) bool { return strings.HasPrefix(p, "detected only: ") })
		if detectedOnly != (r.ID == "gemini") {
			t.Errorf("%s: problems %q", r.ID, r.Problems)
		}
	}
}
