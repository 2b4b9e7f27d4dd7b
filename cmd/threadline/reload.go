// SIGHUP reloads serve's config file (configs.Reloader): access rules,
// channel and room settings, agents and defaults are swapped in for what
// starts next (running runs are untouched); settings that need a restart are
// reported and kept.

package main

import (
	"sync"
	"sync/atomic"

	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/access"
	"github.com/threadline-bot/threadline/configs/agentset"
)

// reloadState is embedded in app: what the last reload put in force.
type reloadState struct {
	reloaderOnce sync.Once
	reloader     *configs.Reloader
	// reloadedAgents is the agent set of the last reload; nil means app.agents.
	reloadedAgents atomic.Pointer[agentset.Set]
}

// agentTable is the agent set in force: the last reload's, else the start's.
func (a *app) agentTable() *agentset.Set {
	if s := a.reloadedAgents.Load(); s != nil {
		return s
	}
	return a.agents
}

// reloads is the app's reloader.
func (a *app) reloads() *configs.Reloader {
	a.reloaderOnce.Do(func() {
		a.reloader = &configs.Reloader{Start: a.cfg, Redactor: a.redactor, Log: a.log, Apply: a.applyReload}
	})
	return a.reloader
}

// applyReload puts a reloaded config's reloadable settings in force: the
// agents section (the agent table the next run starts from), the defaults
// and the access policy the front desk checks.
func (a *app) applyReload(next *configs.Config, r configs.Reload) error {
	set, err := loadAgents(next, a.log)
	if err != nil {
		return err
	}
	eff := r.Effective
	a.reloadedAgents.Store(set)
	a.prompt.Reconfigure(set.Configs, eff.Skills())
	if a.threads != nil {
		def := eff.Defaults.Agent
		if def == "" {
			def = set.First(defaultAgents)
		}
		a.threads.Policy().Replace(access.Policy(eff, def))
	}
	return nil
}
