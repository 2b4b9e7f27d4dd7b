// Agents: the agent table (configs/agentset) over the wiring table's
// built-ins, and `threadline agents`.

package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
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
	if err := confineDetection(cfg, s); err != nil {
		return nil, err
	}
	return s, nil
}

// confineDetection makes detection a launch: version probes, model listing
// and discovery start as a run of the agent starts (as the agent user, in
// the sandbox, with the home and state switches a run gets, under the
// state key probe-<agent>), so nothing they write is unusable by a later
// run, and sign-in checks look at the home a run's logins come from.
func confineDetection(cfg *configs.Config, s *agentset.Set) error {
	host, _, err := cfg.Host.Resolve()
	if err != nil || !host.Isolated() {
		return nil // the start says why (StartHost); probes run as this process
	}
	if host.Iso != nil {
		s.AuthHome = host.Iso.Home
	}
	var sb *execution.Sandboxing
	if host.Sandbox {
		if sb, err = sandboxing(cfg, s, host.Iso); err != nil {
			return err
		}
	}
	s.Confine = func(ctx context.Context, d registry.Definition, env []string) (context.Context, []string, string, error) {
		ctx = procrun.WithIsolation(ctx, host.Iso)
		if sb == nil {
			return ctx, env, "", nil
		}
		provider := agent.ProviderID(cmp.Or(d.Base, d.ID))
		m := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		c, err := sb.Confine(provider, execution.ProbeKey+"-"+d.ID, "", nil, m, host.Iso)
		if err != nil {
			return ctx, env, "", err
		}
		out := make([]string, 0, len(c.Env))
		for k, v := range c.Env {
			out = append(out, k+"="+v)
		}
		slices.Sort(out)
		return procrun.WithSandbox(ctx, c.Sandbox), out, c.Env["HOME"], nil
	}
	return nil
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
