// Codex's model catalog for the registry: `agents`, `/agents` and `doctor`
// list a Codex definition's models through Discover (app-server model/list,
// then `codex debug models`), cached like every probe.

package codexharness

import (
	"context"
	"errors"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/registry"
)

// WithModelDiscovery gives the definitions of agent id (and the local
// profiles based on it) a model discoverer backed by Discover on the
// harness newHarness returns (built on the first such definition), unless a
// definition already lists its models another way. A discovery that found
// nothing (the Auto-only catalog) is an error, so the registry shows the
// fallback list with the reason.
func WithModelDiscovery(defs []registry.Definition, id string, newHarness func() *Harness) []registry.Definition {
	var h *Harness
	for i, d := range defs {
		if d.ID != id && d.Base != id {
			continue
		}
		if d.Models.Discover != nil || d.Models.Command != nil || len(d.ConfigModels) > 0 {
			continue
		}
		if h == nil {
			h = newHarness()
		}
		defs[i].Models.Discover = h.listModels
	}
	return defs
}

// listModels is Discover as a registry.ModelDiscoverer.
func (h *Harness) listModels(ctx context.Context, bin string, env []string) ([]string, error) {
	cat, err := h.Discover(ctx, bin, envMap(env))
	if err != nil {
		return nil, err
	}
	if cat.Source == SourceAuto {
		return nil, errors.New("codex listed no models: " + cat.Warning)
	}
	return cat.ModelIDs(), nil
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
