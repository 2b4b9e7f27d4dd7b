// SIGHUP reloads serve's config file: access rules, channel and room
// settings, agents and defaults are swapped in for what starts next (running
// runs are untouched); settings that need a restart are reported and kept.

package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/access"
)

// reloadState is embedded in app: what the last reload put in force.
type reloadState struct {
	// reloadMu makes reloads one at a time.
	reloadMu sync.Mutex
	// applied is the last config whose reloadable settings are in force;
	// nil means the start's (app.cfg).
	applied *configs.Config
	// reloadedAgents is the agent set of the last reload; nil means app.agents.
	reloadedAgents atomic.Pointer[agentSet]
}

// agentTable is the agent set in force: the last reload's, else the start's.
func (a *app) agentTable() *agentSet {
	if s := a.reloadedAgents.Load(); s != nil {
		return s
	}
	return a.agents
}

// hangups makes SIGHUP reach the returned channel instead of ending the
// process (Go's default for an unhandled SIGHUP is exit 129); a signal that
// arrives before the reload loop runs waits in the channel. signal.Stop
// undoes it.
func hangups() chan os.Signal {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch
}

// reloadOn reloads the config file at path on every signal from hup until
// ctx ends. An empty path searches the default places again, as serve did.
func (a *app) reloadOn(ctx context.Context, hup <-chan os.Signal, path string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			_, _ = a.reload(ctx, path) // reload logs its outcome
		}
	}
}

// reloadResult says what a reload did. Keys are config keys
// ("slack.channels.C1.allow"), never values.
type reloadResult struct {
	// Applied are the changed keys now in force.
	Applied []string
	// Restart are the keys whose file value differs from the running one
	// and that only a restart applies; they keep their running values.
	Restart []string
	// Took is how long the reload took (read, validate, swap).
	Took time.Duration
}

// reload reads the config file at path and, when it is valid, puts its
// reloadable settings in force: access.admins, the Slack workspace and
// channels, the Matrix rooms and the defaults (the access policy the front
// desk checks), and the agents section (the agent table the next run starts
// from). Running runs keep what they started with. Everything else is
// reported as needing a restart and keeps its running value. An invalid
// file is refused with its error and nothing changes. The one shared
// redactor learns the new file's secret values before anything is logged.
func (a *app) reload(ctx context.Context, path string) (reloadResult, error) {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	start := time.Now()
	res, err := a.reloadLocked(path)
	res.Took = time.Since(start)
	if err != nil {
		a.log.ErrorContext(ctx, "config reload refused; the running config is kept", "path", path, "err", err, "took", res.Took)
		return res, err
	}
	if len(res.Restart) > 0 {
		a.log.WarnContext(ctx, "config reload: these settings need a restart and keep their running values", "needs_restart", strings.Join(res.Restart, ", "))
	}
	changed := strings.Join(res.Applied, ", ")
	if changed == "" {
		changed = "(nothing)"
	}
	a.log.InfoContext(ctx, "config reloaded", "path", path, "changed", changed, "took", res.Took)
	return res, nil
}

func (a *app) reloadLocked(path string) (reloadResult, error) {
	if path == "" {
		path = a.cfg.Path()
	}
	next, err := configs.Load(path)
	if err != nil {
		return reloadResult{}, err
	}
	// The new file's secrets join the one redactor of the logger, the
	// prompt service and the front-ends (loadAgents adds the host
	// credentials it passes to it too), so that nothing below logs them.
	next.ShareRedactor(a.redactor)
	set, err := loadAgents(next, a.log)
	if err != nil {
		return reloadResult{}, err
	}
	prev := a.applied
	if prev == nil {
		prev = a.cfg
	}
	plan := configs.PlanReload(a.cfg, prev, next)
	res := reloadResult{Applied: plan.Applied, Restart: plan.Restart}
	eff := plan.Effective
	a.reloadedAgents.Store(set)
	a.prompt.Reconfigure(set.Configs, eff.Skills())
	if a.threads != nil {
		def := eff.Defaults.Agent
		if def == "" {
			def = set.First(defaultAgents)
		}
		a.threads.Policy().Replace(access.Policy(eff, def))
	}
	a.applied = eff
	return res, nil
}
