// The host section: how host agents (chats without a project) are isolated
// from the bot, and the start-up checks of serve, chat and run.

package configs

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/sandbox"
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
	case "", IsolationAuto, IsolationUID, IsolationSandbox, IsolationOff:
	default:
		return fmt.Errorf("host.isolation: %q must be auto, sandbox, uid or off", h.Isolation)
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

// Host is how host agents (chats without a project) run.
type Host struct {
	// Iso switches them to the agent user; nil runs them as the bot's user.
	Iso *procrun.Isolation
	// Sandbox confines each run with Landlock to its chat's workspace and
	// agent state (agentcore/sandbox); on top of Iso when set.
	Sandbox bool
	// Note says why a mode asked for is not the one used (auto on a kernel
	// without Landlock ABI 4), for the start-up line and doctor.
	Note string
}

// Isolated reports whether host agents are kept from the bot's files and
// processes at all.
func (h Host) Isolated() bool { return h.Iso != nil || h.Sandbox }

// Describe is one plain line saying what host agents may touch.
func (h Host) Describe() string {
	who := "as the bot's own user"
	if h.Iso != nil {
		who = "as " + h.Iso.User
	}
	var line string
	switch {
	case h.Sandbox:
		line = "host agents run " + who + " in a sandbox: each may write only its chat's workspace and agent state, read the system and its CLI, reach TCP ports 443, 80 and its endpoints, and no other chat, process or file of the bot"
	case h.Iso != nil:
		line = "host agents run " + who + " (no sandbox): they cannot reach the bot's files or processes, but all chats share that user, its files and the network"
	default:
		line = "host agents run " + who + ", unisolated: they may read and change everything the bot can"
	}
	if h.Note != "" {
		line += " (" + h.Note + ")"
	}
	return line
}

// Resolve resolves the host section. It returns how host agents run; a nil
// unisolated with a Host that is not Isolated when host.isolation is off;
// unisolated (why) when auto found no isolation possible; and err when the
// mode asked for (uid, sandbox) is not possible.
//
//   - sandbox: Landlock (ABI 4 or later), on top of the uid switch when the
//     bot may switch users (root must: the helper never runs as root), as
//     the bot's own user otherwise;
//   - uid: the uid switch alone;
//   - auto: sandbox where the kernel has it, else uid (and says so), else
//     unisolated.
func (h HostConfig) Resolve() (host Host, unisolated, err error) {
	mode := h.mode()
	if mode == IsolationOff {
		return Host{}, nil, nil
	}
	landlock, noLandlock := sandbox.Available()
	if mode == IsolationSandbox && !landlock {
		return Host{}, nil, fmt.Errorf("host.isolation: sandbox: %s", noLandlock)
	}
	iso, isoErr := procrun.NewIsolation(h.user())
	canSwitch, _ := procrun.CanSwitchUser()
	switch {
	case mode == IsolationUID && isoErr != nil:
		return Host{}, nil, fmt.Errorf("host.isolation: uid: %w", isoErr)
	case mode == IsolationUID:
		return Host{Iso: iso}, nil, nil
	case landlock && isoErr == nil:
		return Host{Iso: iso, Sandbox: true}, nil, nil
	case landlock && !canSwitch:
		return Host{Sandbox: true}, nil, nil
	case landlock && mode == IsolationSandbox:
		return Host{}, nil, fmt.Errorf("host.isolation: sandbox: a bot that may switch users runs sandboxed agents as the agent user: %w", isoErr)
	case landlock: // auto, root or capable, without a usable agent user
		return Host{}, isoErr, nil
	case isoErr == nil: // auto without Landlock
		return Host{Iso: iso, Note: "no sandbox: " + noLandlock}, nil, nil
	default:
		return Host{}, isoErr, nil
	}
}

// StartHost prepares this process for serve, chat or run: it makes the
// process non-dumpable, removes from its environment the variables the
// config took secrets from, and resolves how host agents run. serve
// (strict) refuses to run unisolated unless host.isolation is off; chat and
// run warn once on stderr and go on.
func (c *Config) StartHost(strict bool, stderr io.Writer) (Host, error) {
	if err := procrun.SetNotDumpable(); err != nil {
		fmt.Fprintf(stderr, "threadline: warning: %v\n", err)
	}
	c.UnsetSecretEnv()
	host, why, err := c.Host.Resolve()
	switch {
	case err != nil:
		return Host{}, err
	case why == nil:
		return host, nil
	case strict:
		return Host{}, fmt.Errorf("%w: they would run as the bot's own user and could read its environment, config, database and other runs' relays (%w).\n"+
			"Create the agent user (the bot must be root or hold CAP_SETUID and CAP_SETGID, as configs/threadline.service grants):\n  %s\n"+
			"or set host.isolation: off to run agents unisolated knowingly", ErrUnisolated, why, createAgentUser)
	default:
		fmt.Fprintf(stderr, "threadline: warning: agents run as your own user, unisolated (%v); set host.isolation: off to silence this\n", why)
		return Host{}, nil
	}
}
