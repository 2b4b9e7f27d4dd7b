// threadline doctor: the flags and the agent table; the checks are
// configs/doctor's.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/configs/agentset"
	"github.com/threadline-bot/threadline/configs/doctor"
)

func cmdDoctor(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("doctor", stdout, stderr, "threadline doctor [--config F]: check the config, database, agents, chat credentials and LXD")
	config := fs.String("config", "", "config file")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	cfg, err := configs.Load(*config)
	if err != nil {
		doctor.ConfigError(stdout, err)
		return &exitError{1, errors.New("the config has problems")}
	}
	log := slog.New(slog.DiscardHandler)
	set, err := loadAgents(cfg, log)
	if problems := doctor.Run(ctx, cfg, doctorAgents{cfg: cfg, set: set, err: err, log: log}, stdout); problems > 0 {
		return &exitError{1, fmt.Errorf("%d problem(s) found", problems)}
	}
	return nil
}

// doctorAgents is the config's agent set (or why it does not load) as
// doctor.Agents.
type doctorAgents struct {
	cfg *configs.Config
	set *agentset.Set
	err error
	log *slog.Logger
}

func (d doctorAgents) Probe(ctx context.Context) ([]registry.Report, error) {
	if d.err != nil {
		return nil, d.err
	}
	return d.set.Probe(ctx, d.log), nil
}

func (d doctorAgents) Definition(id string) (registry.Definition, bool) {
	def, ok := d.set.ByID[id]
	return def, ok
}

// Default is the configured default, else the first of defaultAgents that
// can run here.
func (d doctorAgents) Default() string {
	if d.cfg.Defaults.Agent != "" {
		return d.cfg.Defaults.Agent
	}
	return d.set.First(defaultAgents)
}
