// Agents: the agent table (configs/agentset) over the wiring table's
// built-ins, and `threadline agents`.

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/codexharness"
)

// loadAgents builds the agent table of cfg from the wiring table's
// built-ins, probed through the capability cache of cfg's database; the
// values it passes from the host join cfg's redactor.
func loadAgents(cfg *configs.Config, log *slog.Logger) (*agentset.Set, error) {
	builtins, err := builtinDefinitions()
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	builtins = codexharness.WithModelDiscovery(builtins, string(codex.ProviderID), func() *codexharness.Harness {
		return codex.New(log.With(logkey.What, "model discovery"), codex.Options{}).Harness()
	})
	s, err := agentset.Load(cfg, builtins, builtinRunners, log)
	if err != nil {
		return nil, err
	}
	s.Prober = chatstore.NewProbeCache(cfg.Database.URL, log).Probe
	cfg.Redactor().Add(s.Secrets...)
	return s, nil
}

// builtinRunners builds the provider of every runnable built-in.
func builtinRunners(log *slog.Logger) ([]agent.Provider, map[string]error) {
	var providers []agent.Provider
	noRunner := map[string]error{}
	for _, b := range builtinTable() {
		p, err := newBuiltinProvider(b, log)
		if err != nil {
			noRunner[b.desc.ID] = err
			continue
		}
		providers = append(providers, p)
	}
	return providers, noRunner
}

func cmdAgents(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("agents", stdout, stderr, "threadline agents [--all] [--json] [--config F]: the agent CLIs installed here")
	config := fs.String("config", "", "config file")
	asJSON := fs.Bool("json", false, "JSON output")
	all := fs.Bool("all", false, "also list agents that are not installed")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	cfg, err := configs.Load(*config)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	set, err := loadAgents(cfg, log)
	if err != nil {
		return err
	}
	return agentset.WriteReports(stdout, set.Probe(ctx, log), *all, *asJSON)
}
