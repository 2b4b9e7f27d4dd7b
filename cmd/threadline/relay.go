// Relays: `threadline relay DIR` (hidden; the detached process that keeps an
// agent alive across restarts, see agentcore/procrun/relay.go), where serve
// keeps them, and reattaching their runs at start-up.

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/store"
)

// appOption tunes openApp.
type appOption func(*appOptions)

type appOptions struct {
	relay   procrun.Relay
	replica replicaOptions // replicas.go
	// isolation runs host agents as another user; workRoot holds the chats'
	// own working directories (isolation.go).
	isolation *procrun.Isolation
	workRoot  string
}

func appOptionsOf(opts []appOption) appOptions {
	var o appOptions
	for _, f := range opts {
		f(&o)
	}
	return o
}

// withRelays runs agents under relays in dir (relayDir() when empty), so that
// runs survive a restart of this process.
func withRelays(dir string) appOption {
	return func(o *appOptions) {
		if dir == "" {
			dir = relayDir()
		}
		exe, err := os.Executable()
		if err != nil {
			return // no relays: runs are interrupted by a restart, as before
		}
		o.relay = procrun.Relay{Dir: dir, Command: []string{exe, "relay"}}
	}
}

// relayDir is $THREADLINE_RELAY_DIR, else $XDG_STATE_HOME/threadline/relays
// (default ~/.local/state/threadline/relays).
func relayDir() string {
	if d := os.Getenv("THREADLINE_RELAY_DIR"); d != "" {
		return d
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "threadline", "relays")
}

// cmdRelay is `threadline relay DIR`, started by procrun with the launch on
// stdin and stderr going to DIR/relay.log.
func cmdRelay(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return &exitError{2, errors.New("usage: threadline relay DIR (started by threadline itself)")}
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	return procrun.RunRelay(ctx, args[0], stdin, stdout, log)
}

// interruptedByStop is what a run's chat says when its process stopped.
const interruptedByStop = "Threadline stopped while this run was active. Send your message again to continue."

// reattachRelays continues the runs whose agents survived the previous
// process under a relay in relay.Dir, before the stale sweep could mark them
// interrupted. A run whose relay died is marked interrupted at once, with a
// message in its chat; a relay whose run ended is removed.
func (a *app) reattachRelays(ctx context.Context, relay procrun.Relay) {
	if relay.Dir == "" {
		return
	}
	states, err := procrun.ListRelays(relay.Dir)
	if err != nil {
		a.log.WarnContext(ctx, "list relays", "err", err)
		return
	}
	for _, st := range states {
		run, err := a.store.GetRun(ctx, st.RunID)
		switch {
		case errors.Is(err, store.ErrNotFound), err == nil && run.Status != runhub.StatusRunning:
			if !st.Live {
				_ = procrun.RemoveRelay(relay.Dir, st.RunID)
			}
			continue
		case err != nil:
			a.log.WarnContext(ctx, "relay: read run", "run", st.RunID, "err", err)
			continue
		case ownerAlive(run.Owner):
			continue // another process of this host follows it
		case !st.Reattachable():
			a.log.InfoContext(ctx, "relay of a run died, marking it interrupted", "chat", run.ChatID, "run", run.ID)
			ok, err := a.store.InterruptRun(ctx, run.ID, "interrupted: its process and relay stopped")
			if err != nil {
				a.log.WarnContext(ctx, "interrupt run", "run", run.ID, "err", err)
				continue
			}
			if ok {
				a.appendEvent(ctx, run.ChatID, run.ID, agent.Event{Type: agent.EventRunInterrupted, Text: interruptedByStop})
			}
			_ = procrun.RemoveRelay(relay.Dir, run.ID)
			continue
		}
		if _, err := a.prompt.Reattach(ctx, run.ChatID, run.ID); err != nil {
			a.log.WarnContext(ctx, "reattach run", "chat", run.ChatID, "run", run.ID, "err", err)
			continue
		}
		a.log.InfoContext(ctx, "run reattached", "chat", run.ChatID, "run", run.ID, "previous_owner", run.Owner)
	}
}

// ownerAlive reports whether owner ("host:pid", see replicaID) is a live
// process of this host other than this one.
func ownerAlive(owner string) bool {
	host, _ := os.Hostname()
	h, p, ok := strings.Cut(owner, ":")
	if !ok || h != host {
		return false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	err = syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
