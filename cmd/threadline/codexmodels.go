// Codex's model catalog in `agents`, `/agents` and `doctor`: the codex
// definitions list their models through Codex's own discovery (app-server
// model/list, then `codex debug models`), cached like every probe.

package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/providers/codex"
	"github.com/threadline-bot/threadline/providers/codexharness"
)

// withCodexDiscovery gives the codex definition (and local profiles based on
// it) a model discoverer backed by codexharness's discovery, unless it
// already lists its models another way. A discovery that found nothing (the
// Auto-only catalog) is an error, so the registry shows the fallback list
// with the reason.
func withCodexDiscovery(defs []registry.Definition, log *slog.Logger) []registry.Definition {
	var p *codex.Provider
	for i, d := range defs {
		if d.ID != string(codex.ProviderID) && d.Base != string(codex.ProviderID) {
			continue
		}
		if d.Models.Discover != nil || d.Models.Command != nil || len(d.ConfigModels) > 0 {
			continue
		}
		if p == nil {
			p = codex.New(log.With("agent", "codex", "what", "model discovery"), codex.Options{})
		}
		defs[i].Models.Discover = func(ctx context.Context, bin string, env []string) ([]string, error) {
			cat, err := p.Harness().Discover(ctx, bin, envMap(env))
			if err != nil {
				return nil, err
			}
			if cat.Source == codexharness.SourceAuto {
				return nil, errors.New("codex listed no models: " + cat.Warning)
			}
			return cat.ModelIDs(), nil
		}
	}
	return defs
}

// envMap turns KEY=VALUE pairs into a map (a later pair wins).
func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
