// threadline doctor: the flags and the agent table; the checks are
// configs/doctor's.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/threadline-bot/threadline/configs"
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
	host, _, _ := cfg.Host.Resolve() // doctor.Run reports a bad host section
	tools, problem := runnableThreadTools(host.Iso)
	if problems := doctor.Run(ctx, cfg, doctor.SetAgents{Cfg: cfg, Set: set, Err: err, Log: log}, tools, problem, stdout); problems > 0 {
		return &exitError{1, fmt.Errorf("%d problem(s) found", problems)}
	}
	return nil
}
