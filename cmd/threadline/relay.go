// Relays: `threadline relay DIR` (hidden; the detached process that keeps an
// agent alive across restarts, see agentcore/procrun/relay.go) and where serve
// keeps them (agentcore/lifecycle reattaches their runs at start-up).

package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/threadline-bot/threadline/agentcore/execution"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/configs"
)

// appOption tunes openApp.
type appOption func(*appOptions)

type appOptions struct {
	relay   procrun.Relay
	replica replicaOptions // replicas.go
	// isolation runs host agents as another user, sandboxed confines them
	// (sandboxing is built from the agents once they are loaded); workRoot
	// holds the chats' own working directories (isolation.go).
	isolation  *procrun.Isolation
	sandboxed  bool
	sandboxing *execution.Sandboxing
	workRoot   string
}

func appOptionsOf(opts []appOption) appOptions {
	var o appOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// withRelays runs agents under relays in dir (configs.RelayDir() when empty), so that
// runs survive a restart of this process.
func withRelays(dir string) appOption {
	return func(o *appOptions) {
		if dir == "" {
			dir = configs.RelayDir()
		}
		exe, err := os.Executable()
		if err != nil {
			return // no relays: runs are interrupted by a restart, as before
		}
		o.relay = procrun.Relay{Dir: dir, Command: []string{exe, "relay"}}
	}
}

// cmdRelay is `threadline relay [--agent-user NAME] DIR`, started by
// procrun with the launch on stdin and stderr going to DIR/relay.log.
func cmdRelay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	log := slog.New(slog.NewTextHandler(stderr, nil))
	if err := procrun.RunRelay(ctx, args, stdin, stdout, log); err != nil {
		return &exitError{2, err}
	}
	return nil
}
