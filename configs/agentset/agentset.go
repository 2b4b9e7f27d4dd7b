// Package agentset is the table of agents a config describes: the built-in
// descriptors with the config's local profiles applied, the provider that
// runs each built-in, the launch each id resolves to, detection, and the
// environment each agent starts with (its declared credentials and the proxy
// variables from the host, plus pass_env; never a variable the config took a
// bot secret from).
package agentset

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs"
)

// Set is every agent id this process knows: built-ins and local profiles.
type Set struct {
	Defs []registry.Definition
	ByID map[string]registry.Definition
	// Providers run the runnable built-ins.
	Providers []agent.Provider
	// Configs are what the prompt service needs per agent id.
	Configs map[string]prompt.AgentConfig
	// NoRunner explains built-ins detected but not runnable here.
	NoRunner map[string]error
	// Secrets are the secret-looking values passed to agents from the host
	// environment (credentials, a proxy URL's password), for redaction.
	Secrets []string
	// Prober detects definitions: registry.Probe unless set (a cached probe).
	Prober func(ctx context.Context, defs []registry.Definition, opts registry.ProbeOptions) []registry.Report
	// Confine starts detection's processes as a run's (as the agent user,
	// in the sandbox, with the run's home); nil: as this process.
	Confine func(ctx context.Context, d registry.Definition, env []string) (context.Context, []string, string, error)
	// AuthHome is the home whose sign-in files a run sees (the agent
	// user's when isolated); empty: this process's.
	AuthHome string
}

// probeOptions are the options of every detection of the set.
func (s *Set) probeOptions(log *slog.Logger) registry.ProbeOptions {
	return registry.ProbeOptions{VersionTimeout: 10 * time.Second, Logger: log, Confine: s.Confine, Home: s.AuthHome}
}

// Runners builds the provider of each runnable built-in, and says why each
// other one cannot run.
type Runners func(log *slog.Logger) (providers []agent.Provider, noRunner map[string]error)

// Load applies the config's agents section (local profiles, bins, args, env,
// models, pass_env, idle timeouts) to the built-in definitions, builds the
// runners, and works out the env each agent starts with (agentEnv).
func Load(cfg *configs.Config, builtins []registry.Definition, runners Runners, log *slog.Logger) (*Set, error) {
	var profiles []registry.Profile
	ids := make([]string, 0, len(cfg.Agents))
	for id := range cfg.Agents {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		a := cfg.Agents[id]
		profiles = append(profiles, registry.Profile{ID: id, Base: a.Base, Bin: a.Bin, Args: a.Args, Env: a.Env, PassEnv: a.PassEnv})
	}
	defs, err := registry.Apply(builtins, profiles)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	s := &Set{Defs: defs, ByID: map[string]registry.Definition{}, Configs: map[string]prompt.AgentConfig{}, Prober: registry.Probe}
	for _, d := range defs {
		s.ByID[d.ID] = d
	}
	s.Providers, s.NoRunner = runners(log)
	host := os.Environ()
	blocked := cfg.SecretSources(host)
	s.Secrets = configs.SecretEnvValues(procrun.ProxyKeys...)
	for _, d := range defs {
		env, passed := agentEnv(d, host, blocked)
		s.Secrets = append(s.Secrets, configs.SecretEnvValues(passed...)...)
		s.Configs[d.ID] = prompt.AgentConfig{
			Provider: agent.ProviderID(cmp.Or(d.Base, d.ID)), Bin: d.Bin, Args: d.Args.Extra, Env: env, Model: cfg.Agents[d.ID].Model,
			Skills: d.Skills, IdleTimeout: cfg.IdleTimeout(d.ID), NativeFork: d.NativeFork,
		}
	}
	return s, nil
}

// Launch resolves an agent id to its definition and executable, as a run
// would.
func (s *Set) Launch(id string) (registry.Definition, string, error) {
	d, ok := s.ByID[id]
	if !ok {
		return d, "", fmt.Errorf("unknown agent %q (see `threadline agents`)", id)
	}
	if err := s.NoRunner[cmp.Or(d.Base, id)]; err != nil {
		return d, "", err
	}
	l, err := registry.Resolve(d, exec.LookPath)
	if err != nil {
		return d, "", err
	}
	return d, l.Path, nil
}

// Runnable lists the agents that can run on this host (a runner and an
// executable on PATH).
func (s *Set) Runnable() []string {
	var out []string
	for _, d := range s.Defs {
		if _, _, err := s.Launch(d.ID); err == nil {
			out = append(out, d.ID)
		}
	}
	return out
}

// First is the first of ids that can run here, or "".
func (s *Set) First(ids []string) string {
	for _, id := range ids {
		if _, _, err := s.Launch(id); err == nil {
			return id
		}
	}
	return ""
}

// DefaultOrder is the order agents are tried in when the config names no
// default agent.
var DefaultOrder = []string{"claude", "codex", "opencode", "gemini", "qwen", "pi", "kimi"}

// Default is the config's default agent (def) when set, else the first of
// DefaultOrder that can run here; with none, the error says why each cannot.
func (s *Set) Default(def string) (string, error) {
	if def != "" {
		return def, nil
	}
	var missing []string
	for _, id := range DefaultOrder {
		_, _, err := s.Launch(id)
		if err == nil {
			return id, nil
		}
		missing = append(missing, err.Error())
	}
	return "", fmt.Errorf("no agent CLI is installed:\n  %s\n(`threadline agents --all` lists every agent Threadline can run)", strings.Join(missing, "\n  "))
}

// IDs lists the known agent ids, sorted.
func (s *Set) IDs() []string {
	ids := make([]string, len(s.Defs))
	for i, d := range s.Defs {
		ids[i] = d.ID
	}
	sort.Strings(ids)
	return ids
}

// Probe detects every agent concurrently; a built-in without a runner here
// is reported "detected only".
func (s *Set) Probe(ctx context.Context, log *slog.Logger) []registry.Report {
	reports := s.Prober(ctx, s.Defs, s.probeOptions(log))
	for i, r := range reports {
		if err := s.NoRunner[cmp.Or(r.Base, r.ID)]; err != nil {
			reports[i].Problems = append(reports[i].Problems, "detected only: "+err.Error())
		}
	}
	return reports
}

// agentEnv is the env an agent is started with over the allow-listed host
// environment: the host values of the variables its descriptor and pass_env
// name (d.HostEnvNames), under its configured env, which wins. passed are
// the names taken from the host, for the redaction set.
func agentEnv(d registry.Definition, host []string, blocked func(string) bool) (env map[string]string, passed []string) {
	env = procrun.HostPass(host, d.HostEnvNames(), blocked)
	for k := range env {
		if _, over := d.Env[k]; !over {
			passed = append(passed, k)
		}
	}
	slices.Sort(passed)
	for k, v := range d.Env {
		env[k] = v
	}
	if len(env) == 0 {
		return nil, nil
	}
	return env, passed
}

// ProbeOne detects the agent id alone through the Prober (no "detected
// only" note); ok is false for an unknown id.
func (s *Set) ProbeOne(ctx context.Context, id string, log *slog.Logger) (r registry.Report, ok bool) {
	d, ok := s.ByID[id]
	if !ok {
		return registry.Report{}, false
	}
	return s.Prober(ctx, []registry.Definition{d}, s.probeOptions(log))[0], true
}

// VersionCheck is prompt.VersionChecker over the agent table in force
// (Table, reloads included): the probe of one agent through the Prober (the
// capability cache), so a run pays for `--version` only when no process
// probed the CLI within the cache's TTL.
type VersionCheck struct {
	// Table returns the agent set in force; nil checks nothing.
	Table func() *Set
	Log   *slog.Logger
}

var _ prompt.VersionChecker = (*VersionCheck)(nil)

// CheckVersion returns the agent CLI's version and the registry's warning
// when it is outside the verified versions; "" for an unknown agent.
func (v *VersionCheck) CheckVersion(ctx context.Context, agentID string) (version, warning string) {
	if v.Table == nil {
		return "", ""
	}
	r, ok := v.Table().ProbeOne(ctx, agentID, v.Log)
	if !ok {
		return "", ""
	}
	return r.Version, r.VersionWarning
}
