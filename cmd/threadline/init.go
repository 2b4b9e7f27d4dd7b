// threadline init: the flags, the detected agent and what is printed; the
// starter config is configs.Starter's.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/threadline-bot/threadline/configs"
)

func cmdInit(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("init", stdout, stderr, "threadline init [--platform none|slack|matrix] [--config F]: write a starter config (default $XDG_CONFIG_HOME/threadline/config.yaml); an existing file is never overwritten")
	target := fs.String("config", "", "the file to write")
	platform := fs.String("platform", "none", "none (the terminal chat only), slack (socket mode) or matrix")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	path := *target
	if path == "" {
		paths := configs.Paths()
		path = paths[len(paths)-1]
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	st, err := configs.NewStarter(abs, *platform)
	if errors.Is(err, configs.ErrUnknownPlatform) {
		return &exitError{2, err}
	}
	if err != nil {
		return err
	}
	// The agent: the first installed CLI, found as chat would find it.
	defaults, err := configs.Load(os.DevNull) // the built-in defaults
	if err != nil {
		return err
	}
	var hint string
	st.Agent, hint = detectAgent(defaults, newLogger(stderr, slog.LevelError, defaults))
	if err := st.Write(abs, time.Now()); err != nil {
		return err
	}
	if *platform == "none" { // the others load once their secret files exist
		if _, err := configs.Load(abs); err != nil {
			return fmt.Errorf("the starter config does not load (a bug): %w", err)
		}
	}
	fmt.Fprintf(stdout, "Wrote %s.\n", abs)
	if shadow := configs.Paths()[0]; *target == "" && shadow != abs {
		if _, err := os.Stat(shadow); err == nil {
			fmt.Fprintf(stdout, "Note: ./%s exists and is read first; pass --config %s to use the new file.\n", shadow, abs)
		}
	}
	cfgFlag := ""
	if *target != "" {
		cfgFlag = " --config " + abs
	}
	fmt.Fprintln(stdout, "Next:")
	for i, step := range st.Steps(hint, cfgFlag) {
		fmt.Fprintf(stdout, "  %d. %s\n", i+1, step)
	}
	return nil
}

// detectAgent is the first installed agent CLI, as chat picks one with no
// defaults.agent; else "" and how to install the first one.
func detectAgent(cfg *configs.Config, log *slog.Logger) (id, hint string) {
	set, err := loadAgents(cfg, log)
	if err != nil {
		return "", err.Error()
	}
	for _, id := range defaultAgents {
		if _, _, err := set.Launch(id); err == nil {
			return id, ""
		}
	}
	return "", "npm install -g @anthropic-ai/claude-code for Claude Code; threadline agents --all lists the others"
}
