// The starter config of `threadline init`: every section commented, the
// detected agent and the chosen platform filled in, the platform's secrets in
// *_file files; written once, never over an existing file, with the next
// steps to take.

package configs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrUnknownPlatform is a starter platform other than none, slack or matrix.
var ErrUnknownPlatform = errors.New("want none, slack or matrix")

// Starter describes a starter config.
type Starter struct {
	// Agent is the detected agent id; "" when no agent CLI is installed.
	Agent string
	// Platform is "none" (the terminal chat only), "slack" or "matrix".
	Platform string
	// Secrets is the directory of the platform's secret files.
	Secrets string
}

// NewStarter is the starter of platform for the config file at path (its
// secrets in the secrets directory beside it); an unknown platform is
// ErrUnknownPlatform, an existing file an error.
func NewStarter(path, platform string) (Starter, error) {
	switch platform {
	case "none", "slack", "matrix":
	default:
		return Starter{}, fmt.Errorf("--platform %q: %w", platform, ErrUnknownPlatform)
	}
	if _, err := os.Stat(path); err == nil {
		return Starter{}, fmt.Errorf("%s exists: init never overwrites a config (edit it, or pass --config NEW_FILE)", path)
	}
	return Starter{Platform: platform, Secrets: filepath.Join(filepath.Dir(path), "secrets")}, nil
}

// Write creates path (and its directory, mode 0700) with the starter's
// text, mode 0600, never over an existing file.
func (s Starter) Write(path string, now time.Time) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := io.WriteString(f, s.Text(now)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Steps are what to do once the starter is written; installHint says how to
// install an agent when none was detected, cfgFlag (" --config F", or "")
// is appended to the commands.
func (s Starter) Steps(installHint, cfgFlag string) []string {
	var out []string
	if s.Agent == "" {
		out = append(out, fmt.Sprintf("install an agent CLI (%s), then set defaults.agent", installHint))
	}
	switch s.Platform {
	case "slack":
		out = append(out, "create the Slack app from configs/slack-manifest.yaml, install it to the workspace",
			fmt.Sprintf("umask 077; mkdir -p %s; write the app-level token (xapp-…) to %s and the bot token (xoxb-…) to %s", s.Secrets, s.secret("slack_app_token"), s.secret("slack_bot_token")),
			`put your Slack user id in access.admins ("slack:U…")`,
			fmt.Sprintf("threadline doctor%s, then threadline serve%s; invite the bot to a channel and mention it", cfgFlag, cfgFlag))
	case "matrix":
		out = append(out, "set matrix.homeserver and matrix.user_id to the bot's account",
			fmt.Sprintf("umask 077; mkdir -p %s; write its access token to %s", s.Secrets, s.secret("matrix_access_token")),
			`put your Matrix id in access.admins ("matrix:@you:example.org")`,
			fmt.Sprintf("threadline doctor%s, then threadline serve%s; invite the bot to a room and mention it", cfgFlag, cfgFlag))
	default:
		out = append(out, "threadline chat"+cfgFlag)
	}
	return out
}

// secret is the file of the secret named name.
func (s Starter) secret(name string) string { return filepath.Join(s.Secrets, name) }

// Text is the starter config, dated now.
func (s Starter) Text(now time.Time) string {
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
`, now.UTC().Format("2006-01-02"), s.secret("database_url"))
	if s.Agent != "" {
		fmt.Fprintf(&b, "  %-27s # detected: the first installed agent CLI (threadline agents)\n", "agent: "+s.Agent)
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
	switch s.Platform {
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
`, s.secret("slack_app_token"), s.secret("slack_bot_token"))
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
`, s.secret("matrix_access_token"))
	}
	return b.String()
}
