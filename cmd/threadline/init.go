// threadline init: a commented starter config (SQLite, the detected agent,
// the chosen platform with its secrets in *_file files), never over an
// existing file, and the next steps.

package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	switch *platform {
	case "none", "slack", "matrix":
	default:
		return &exitError{2, fmt.Errorf("--platform %q: want none, slack or matrix", *platform)}
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
	if _, err := os.Stat(abs); err == nil {
		return fmt.Errorf("%s exists: init never overwrites a config (edit it, or pass --config NEW_FILE)", abs)
	}
	dir := filepath.Dir(abs)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}

	// The agent: the first installed CLI, found as chat would find it.
	defaults, err := configs.Load(os.DevNull) // the built-in defaults
	if err != nil {
		return err
	}
	agentID, hint := detectAgent(defaults, newLogger(stderr, slog.LevelError, defaults))

	secrets := filepath.Join(dir, "secrets")
	body := starterConfig(time.Now(), agentID, *platform, secrets)
	f, err := os.OpenFile(abs, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", abs, err)
	}
	if _, err := io.WriteString(f, body); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
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
	fmt.Fprintln(stdout, "Next:")
	step := 1
	next := func(format string, a ...any) {
		fmt.Fprintf(stdout, "  %d. %s\n", step, fmt.Sprintf(format, a...))
		step++
	}
	if agentID == "" {
		next("install an agent CLI (%s), then set defaults.agent", hint)
	}
	cfgFlag := ""
	if *target != "" {
		cfgFlag = " --config " + abs
	}
	switch *platform {
	case "slack":
		next("create the Slack app from configs/slack-manifest.yaml, install it to the workspace")
		next("umask 077; mkdir -p %s; write the app-level token (xapp-…) to %s and the bot token (xoxb-…) to %s", secrets, filepath.Join(secrets, "slack_app_token"), filepath.Join(secrets, "slack_bot_token"))
		next("put your Slack user id in access.admins (\"slack:U…\")")
		next("threadline doctor%s, then threadline serve%s; invite the bot to a channel and mention it", cfgFlag, cfgFlag)
	case "matrix":
		next("set matrix.homeserver and matrix.user_id to the bot's account")
		next("umask 077; mkdir -p %s; write its access token to %s", secrets, filepath.Join(secrets, "matrix_access_token"))
		next("put your Matrix id in access.admins (\"matrix:@you:example.org\")")
		next("threadline doctor%s, then threadline serve%s; invite the bot to a room and mention it", cfgFlag, cfgFlag)
	default:
		next("threadline chat%s", cfgFlag)
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

// starterConfig is the text of a starter config: every section commented,
// the agent and the platform filled in.
func starterConfig(now time.Time, agentID, platform, secrets string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# Threadline configuration, written by threadline init on %s.
# Every key and its default: docs/config.md. ${VAR} is the environment
# variable VAR (an unset one is an error); a secret is best kept in a file
# named by <key>_file (mode 0600), as below.

# The store: SQLite under $XDG_DATA_HOME/threadline/ (~/.local/share/threadline)
# unless a URL is set here. Postgres, for several replicas:
# database:
#   url_file: %s

defaults:
`, now.UTC().Format("2006-01-02"), filepath.Join(secrets, "database_url"))
	if agentID != "" {
		fmt.Fprintf(&b, "  %-27s # detected: the first installed agent CLI (threadline agents)\n", "agent: "+agentID)
	} else {
		b.WriteString("  # agent: claude            # no agent CLI was installed when this was written\n")
	}
	b.WriteString(`  # interaction_timeout: 10m  # decline approvals nobody answered in time (default: wait)
  # idle_timeout: 30m         # stop an agent silent this long (0 disables)

# agents:
#   claude:
#     model: ""               # default model; a chat's /model overrides it
#     pass_env: [HTTPS_PROXY] # host variables beside the agent's own credentials

# Host agents run as the unprivileged host.user when the bot may switch users
# (root, or CAP_SETUID/CAP_SETGID as configs/threadline.service grants).
# host:
#   user: threadline-agent
#   isolation: auto           # auto | uid | off
`)
	switch platform {
	case "slack":
		fmt.Fprintf(&b, `
access:
  admins: []                  # "slack:U0123ABC": may run and approve everywhere

# The Slack app from configs/slack-manifest.yaml, in socket mode (no inbound port).
slack:
  mode: socket
  app_token_file: %s
  bot_token_file: %s
  # channels:
  #   C0123ABC: {agent: claude, allow: [U0123ABC], approvers: [U0123ABC]}
`, filepath.Join(secrets, "slack_app_token"), filepath.Join(secrets, "slack_bot_token"))
	case "matrix":
		fmt.Fprintf(&b, `
access:
  admins: []                  # "matrix:@you:example.org": may run and approve everywhere

# An ordinary account for the bot; it joins rooms it is invited to by allowed users.
matrix:
  homeserver: https://matrix.example.org
  user_id: "@threadline:example.org"
  access_token_file: %s
  # rooms:
  #   "!abc:example.org": {agent: claude, allow: ["@you:example.org"], approvers: ["@you:example.org"]}
`, filepath.Join(secrets, "matrix_access_token"))
	}
	return b.String()
}
