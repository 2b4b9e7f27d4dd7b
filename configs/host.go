// The host section: how host agents (chats without a project) are isolated
// from the bot, and the start-up checks of serve, chat and run.

package configs

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// Isolation modes (host.isolation).
const (
	IsolationAuto    = "auto"
	IsolationUID     = "uid"
	IsolationSandbox = "sandbox"
	IsolationOff     = "off"
)

// DefaultAgentUser is host.user's default.
const DefaultAgentUser = "threadline-agent"

// createAgentUser is the command that creates the default agent user.
const createAgentUser = "useradd --system --create-home --home-dir /var/lib/threadline-agent threadline-agent"

// ErrUnisolated marks host agents that would run as the bot's own user.
var ErrUnisolated = errors.New("host agents are not isolated")

func (h HostConfig) validate() error {
	switch h.Isolation {
	case "", IsolationAuto, IsolationUID, IsolationOff:
	case IsolationSandbox:
		return errors.New("host.isolation: sandbox is not available in this build; use uid (a dedicated agent user, see README \"Isolation\") or off")
	default:
		return fmt.Errorf("host.isolation: %q must be auto, uid or off", h.Isolation)
	}
	if strings.ContainsAny(h.User, ":/ ") {
		return fmt.Errorf("host.user: %q is not a user name", h.User)
	}
	return nil
}

func (h HostConfig) user() string {
	if h.User == "" {
		return DefaultAgentUser
	}
	return h.User
}

func (h HostConfig) mode() string {
	if h.Isolation == "" {
		return IsolationAuto
	}
	return h.Isolation
}

// Resolve resolves the host section. It returns the isolation of host
// agents; nil and nil errors when host.isolation is off; nil and unisolated
// (why) when auto found no isolation possible; and err when uid was asked
// for and is not possible.
func (h HostConfig) Resolve() (iso *procrun.Isolation, unisolated, err error) {
	if h.mode() == IsolationOff {
		return nil, nil, nil
	}
	iso, err = procrun.NewIsolation(h.user())
	switch {
	case err == nil:
		return iso, nil, nil
	case h.mode() == IsolationUID:
		return nil, nil, fmt.Errorf("host.isolation: uid: %w", err)
	default:
		return nil, err, nil
	}
}

// StartHost prepares this process for serve, chat or run: it makes the
// process non-dumpable, removes from its environment the variables the
// config took secrets from, and resolves the isolation of host agents. serve
// (strict) refuses to run unisolated unless host.isolation is off; chat and
// run warn once on stderr and go on.
func (c *Config) StartHost(strict bool, stderr io.Writer) (*procrun.Isolation, error) {
	if err := procrun.SetNotDumpable(); err != nil {
		fmt.Fprintf(stderr, "threadline: warning: %v\n", err)
	}
	c.UnsetSecretEnv()
	iso, why, err := c.Host.Resolve()
	switch {
	case err != nil:
		return nil, err
	case why == nil:
		return iso, nil
	case strict:
		return nil, fmt.Errorf("%w: they would run as the bot's own user and could read its environment, config, database and other runs' relays (%w).\n"+
			"Create the agent user (the bot must be root or hold CAP_SETUID and CAP_SETGID, as configs/threadline.service grants):\n  %s\n"+
			"or set host.isolation: off to run agents unisolated knowingly", ErrUnisolated, why, createAgentUser)
	default:
		fmt.Fprintf(stderr, "threadline: warning: agents run as your own user, unisolated (%v); set host.isolation: off to silence this\n", why)
		return nil, nil
	}
}
