// The config's agent table as the Agents doctor checks.

package doctor

import (
	"context"
	"log/slog"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
)

// SetAgents is a config's agent set, or why it does not load, as Agents.
type SetAgents struct {
	Cfg *configs.Config
	Set *agentset.Set
	// Err is why Set did not load (agentset.Load's error).
	Err error
	Log *slog.Logger
}

var _ Agents = SetAgents{}

// Probe detects every agent of the set, or returns Err.
func (d SetAgents) Probe(ctx context.Context) ([]registry.Report, error) {
	if d.Err != nil {
		return nil, d.Err
	}
	return d.Set.Probe(ctx, d.Log), nil
}

// Definition is the definition of agent id.
func (d SetAgents) Definition(id string) (registry.Definition, bool) {
	if d.Set == nil {
		return registry.Definition{}, false
	}
	def, ok := d.Set.ByID[id]
	return def, ok
}

// Default is the configured default, else the first of
// agentset.DefaultOrder that can run here, else "".
func (d SetAgents) Default() string {
	if d.Cfg.Defaults.Agent != "" || d.Set == nil {
		return d.Cfg.Defaults.Agent
	}
	return d.Set.First(agentset.DefaultOrder)
}

// IDs lists the known agent ids, sorted; nil when the set did not load.
func (d SetAgents) IDs() []string {
	if d.Set == nil {
		return nil
	}
	return d.Set.IDs()
}
