package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"time"
)

// DefaultSetupLimit bounds a Setup without a Limit.
const DefaultSetupLimit = 10 * time.Minute

// setupTail is how much of a setup command's output RunSetup returns.
const setupTail = 4 << 10

// Setup is a chat clone's setup command (npm ci, make deps). Running it is
// the caller's choice: RunSetup is a helper, and the caller says who runs
// it (the chat's Agent hook: it runs the project's code).
type Setup struct {
	Dir   string          // where it runs: the new clone
	Args  []string        // its argv, e.g. {"/bin/sh", "-c", "npm ci"}
	Env   []string        // its whole environment; nil is the bot's
	Limit time.Duration   // 0 is DefaultSetupLimit
	Cmd   func(*exec.Cmd) // sees the command before it starts (the agent's user, a sandbox)
}

// RunSetup runs s in its own process group, killed with everything it
// started at s.Limit (ErrTimeout) or when ctx ends, and returns the last 4
// KiB of its stdout and stderr, interleaved as written.
func RunSetup(ctx context.Context, s Setup) (string, error) {
	if len(s.Args) == 0 {
		return "", invalid("the setup command is empty")
	}
	cctx, cancel := context.WithTimeout(ctx, cmp.Or(s.Limit, DefaultSetupLimit))
	defer cancel()
	cmd := exec.CommandContext(cctx, s.Args[0], s.Args[1:]...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	out := &tailBuffer{max: setupTail}
	cmd.Stdout, cmd.Stderr = out, out
	if s.Cmd != nil {
		s.Cmd(cmd)
	}
	setProcGroup(cmd)
	cmd.Cancel = func() error { return killGroup(cmd) }
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	switch {
	case err == nil:
		return out.String(), nil
	case ctx.Err() != nil:
		return out.String(), ctx.Err()
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return out.String(), fmt.Errorf("setup %s: %w", s.Args[0], ErrTimeout)
	}
	return out.String(), fmt.Errorf("setup %s: %w", s.Args[0], err)
}
