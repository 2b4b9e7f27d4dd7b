// Agents: the registry's definitions (the wiring table's built-ins and the
// config's local profiles), the provider that runs each, detection, and
// `threadline agents`.

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/configs"
)

// errNoRunner marks a detected CLI that this build cannot run yet.
var errNoRunner = errors.New("no runner for this agent in this build")

// agentSet is every agent id this process knows: built-ins and local profiles.
type agentSet struct {
	defs      []registry.Definition
	byID      map[string]registry.Definition
	providers []agent.Provider
	// configs are what the prompt service needs per agent id.
	configs map[string]prompt.AgentConfig
	// noRunner explains built-ins detected but not runnable here.
	noRunner map[string]error
	// secrets are the secret-looking values passed to agents from the host
	// environment (credentials, a proxy URL's password), for redaction.
	secrets []string
	// caps is the probe cache, persisted in the database (capcache.go).
	caps *capCache
}

// loadAgents applies the config's agents section to the built-in definitions
// and builds one provider per runnable built-in.
func loadAgents(cfg *configs.Config, log *slog.Logger) (*agentSet, error) {
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
	builtins, err := builtinDefinitions()
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	builtins = withCodexDiscovery(builtins, log)
	defs, err := registry.Apply(builtins, profiles)
	if err != nil {
		return nil, fmt.Errorf("agents: %w", err)
	}
	s := &agentSet{defs: defs, byID: map[string]registry.Definition{}, configs: map[string]prompt.AgentConfig{}, noRunner: map[string]error{},
		caps: newCapCache(cfg.Database.URL, log)}
	for _, d := range defs {
		s.byID[d.ID] = d
	}
	for _, b := range builtinTable() {
		p, err := newBuiltinProvider(b, log.With("agent", b.desc.ID))
		if err != nil {
			s.noRunner[b.desc.ID] = err
			continue
		}
		s.providers = append(s.providers, p)
	}
	host := os.Environ()
	blocked := cfg.SecretSources(host)
	s.secrets = configs.SecretEnvValues(procrun.ProxyKeys...)
	for _, d := range defs {
		base := d.ID
		if d.Base != "" {
			base = d.Base
		}
		env, passed := agentEnv(d, host, blocked)
		s.secrets = append(s.secrets, configs.SecretEnvValues(passed...)...)
		s.configs[d.ID] = prompt.AgentConfig{
			Provider: agent.ProviderID(base), Bin: d.Bin, Args: d.Args.Extra, Env: env, Model: cfg.Agents[d.ID].Model,
			Skills: d.Skills, IdleTimeout: cfg.IdleTimeout(d.ID), NativeFork: d.NativeFork,
		}
	}
	redactorOf(cfg).Add(s.secrets...)
	return s, nil
}

// launch resolves an agent id to its executable, as a run would.
func (s *agentSet) launch(id string) (registry.Definition, string, error) {
	d, ok := s.byID[id]
	if !ok {
		return d, "", fmt.Errorf("unknown agent %q (see `threadline agents`)", id)
	}
	base := id
	if d.Base != "" {
		base = d.Base
	}
	if err := s.noRunner[base]; err != nil {
		return d, "", err
	}
	l, err := registry.Resolve(d, exec.LookPath)
	if err != nil {
		return d, "", err
	}
	return d, l.Path, nil
}

// runnable lists the agents that can run on this host (a runner and an
// executable on PATH).
func (s *agentSet) runnable() []string {
	var out []string
	for _, d := range s.defs {
		if _, _, err := s.launch(d.ID); err == nil {
			out = append(out, d.ID)
		}
	}
	return out
}

// probe detects every agent concurrently.
func (s *agentSet) probe(ctx context.Context, log *slog.Logger) []registry.Report {
	reports := s.caps.probe(ctx, s.defs, registry.ProbeOptions{VersionTimeout: 10 * time.Second, Logger: log})
	for i, r := range reports {
		base := r.ID
		if r.Base != "" {
			base = r.Base
		}
		if err := s.noRunner[base]; err != nil {
			reports[i].Problems = append(reports[i].Problems, "detected only: "+err.Error())
		}
	}
	return reports
}

// agentInfos turns reports into chatops' view.
func agentInfos(reports []registry.Report) []chatops.AgentInfo {
	out := make([]chatops.AgentInfo, 0, len(reports))
	for _, r := range reports {
		info := chatops.AgentInfo{ID: r.ID, Installed: r.Status != registry.StatusMissing, Version: r.Version, Models: r.Models, InstallHint: r.InstallHint,
			Args: r.ArgRules()}
		if r.VersionWarning != "" {
			info.Problem = r.VersionWarning
		}
		if len(r.Problems) > 0 {
			info.Problem = r.Problems[0]
		}
		out = append(out, info)
	}
	return out
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
	reports := set.probe(ctx, log)
	if !*all && !*asJSON {
		shown := reports[:0:0]
		for _, r := range reports {
			if r.Status != registry.StatusMissing {
				shown = append(shown, r)
			}
		}
		if len(shown) == 0 {
			fmt.Fprintln(stdout, "No agent CLI is installed. `threadline agents --all` lists the ones Threadline can run, with install commands.")
			return nil
		}
		reports = shown
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(reports)
	}
	out := registry.Table(reports)
	if !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	_, err = io.WriteString(stdout, out)
	return err
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
