// Package lifecycle is the run-lifecycle policy of a Threadline process: at
// start-up it reattaches the runs whose agents survived under a relay and marks
// the runs of dead processes interrupted (Recover); while it runs it heartbeats
// its own runs, sweeps the runs of processes that stopped heartbeating and
// fences the runs the database gave away (Run); and when a chat is busy with a
// run of a dead process of this host it frees the chat at once (Reclaim).
//
// Failover bound: a process's runs carry a heartbeat refreshed every
// HeartbeatEvery; a survivor's sweep (every HeartbeatEvery) marks a run
// interrupted once its heartbeat is older than StaleAfter, so a dead replica
// is detected between StaleAfter-HeartbeatEvery and StaleAfter+HeartbeatEvery
// after its death (35 to 55 s with the defaults). The heartbeat is written with
// the owner's clock and compared with the sweeper's: replicas' clocks must
// agree to well within StaleAfter-HeartbeatEvery (NTP). A run owned by a dead
// process of this host needs no such wait: Reclaim sees the process is gone.
//
// The package declares what it needs from the store (Store) and the event log
// (Events); it never imports the store or a front-end.
package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Defaults of the liveness timing.
const (
	// DefaultHeartbeatEvery is how often a process refreshes its running runs.
	DefaultHeartbeatEvery = 10 * time.Second
	// DefaultStaleAfter is how old a run's heartbeat may get before the run is
	// taken to be dead (several missed heartbeats).
	DefaultStaleAfter = 45 * time.Second
)

// InterruptedByStop is what a run's chat says when the process running it
// stopped.
const InterruptedByStop = "Threadline stopped while this run was active. Send your message again to continue."

// Reasons recorded in the runs table.
const (
	reasonRelayDied   = "interrupted: its process and relay stopped"
	reasonOwnerExited = "interrupted: the process running it exited"
)

// ErrNotFound is what a Store returns (wrapped) for an unknown run.
var ErrNotFound = errors.New("lifecycle: not found")

// Run is what the lifecycle needs to know of a stored run.
type Run struct {
	ID     agent.RunID
	ChatID agent.ChatID
	Status runhub.RunStatus
	// Owner names the process running it: "host:pid" for a process started
	// by threadline (see OwnerID), any name for a replica named by its
	// operator.
	Owner     string
	StartedAt time.Time
	// HeartbeatAt is the owner's last heartbeat (zero when it never beat).
	HeartbeatAt time.Time
}

// lastSeen is when the run's owner was last known to be alive, by its own
// clock: a process that started later is not the owner (its pid was reused).
func (r Run) lastSeen() time.Time {
	if r.HeartbeatAt.After(r.StartedAt) {
		return r.HeartbeatAt
	}
	return r.StartedAt
}

// Interaction is a pending interaction that was expired.
type Interaction struct {
	ID     agent.InteractionID
	ChatID agent.ChatID
	RunID  agent.RunID
}

// Store is the run table as the lifecycle uses it.
type Store interface {
	// Run returns the run, or an error wrapping ErrNotFound.
	Run(ctx context.Context, runID string) (Run, error)
	// RunningRun returns the chat's running run; ok is false when it has none.
	RunningRun(ctx context.Context, chatID string) (run Run, ok bool, err error)
	// HeartbeatRuns refreshes the heartbeat of owner's running runs.
	HeartbeatRuns(ctx context.Context, owner string) (int, error)
	// MarkStaleRunsInterrupted interrupts the running runs whose heartbeat is
	// older than before, except those in keep, and returns them.
	MarkStaleRunsInterrupted(ctx context.Context, before time.Time, keep ...string) ([]Run, error)
	// InterruptRun interrupts a running run; it reports whether it was running.
	InterruptRun(ctx context.Context, runID agent.RunID, reason string) (bool, error)
	// ExpireOrphanedInteractions expires the interactions left pending by runs
	// that no longer run, and returns them.
	ExpireOrphanedInteractions(ctx context.Context) ([]Interaction, error)
}

// Events appends to a chat's event log (runhub.Hub).
type Events interface {
	Append(ctx context.Context, chatID agent.ChatID, runID agent.RunID, typ string, payload json.RawMessage) (runhub.Event, error)
}

// Reattacher continues a run whose agent survived under a relay
// (prompt.Service).
type Reattacher interface {
	Reattach(ctx context.Context, chatID agent.ChatID, runID agent.RunID) (*prompt.Run, error)
}

// Fencer stops this process's runs the database no longer gives it
// (prompt.Service).
type Fencer interface {
	Fence(ctx context.Context, owned func(ctx context.Context, runID string) (bool, error)) []string
}

// Config configures a Liveness.
type Config struct {
	// Owner names this process in run rows.
	Owner string
	// RelayDir is where this host's relays live: their runs are never swept
	// or reclaimed (a `serve` reattaches them), and Recover reattaches them.
	RelayDir string
	// HeartbeatEvery and StaleAfter default to DefaultHeartbeatEvery and
	// DefaultStaleAfter.
	HeartbeatEvery, StaleAfter time.Duration
	// Log defaults to slog.Default().
	Log *slog.Logger
}

// Liveness applies the lifecycle policy to one process's runs.
type Liveness struct {
	st     Store
	events Events
	cfg    Config
	log    *slog.Logger
	host   string
	pid    int

	reclaimMu sync.Mutex // one Reclaim at a time: the checks and the interrupt are not atomic
}

// New returns the Liveness of the process named cfg.Owner.
func New(st Store, events Events, cfg Config) *Liveness {
	if cfg.HeartbeatEvery <= 0 {
		cfg.HeartbeatEvery = DefaultHeartbeatEvery
	}
	if cfg.StaleAfter <= 0 {
		cfg.StaleAfter = DefaultStaleAfter
	}
	log := cfg.Log
	if log == nil {
		log = slog.Default()
	}
	host, _ := os.Hostname()
	return &Liveness{st: st, events: events, cfg: cfg, log: log, host: host, pid: os.Getpid()}
}

// OwnerID names this process in run rows: "host:pid".
func OwnerID() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}

// Owner is the name this Liveness heartbeats for.
func (l *Liveness) Owner() string { return l.cfg.Owner }

// Recover is the start-up step: with r set (this process runs agents under
// relays in RelayDir) the runs whose agents survived the previous process are
// reattached and those whose relay died are interrupted; then the runs of
// dead processes are swept.
func (l *Liveness) Recover(ctx context.Context, r Reattacher) {
	if r != nil {
		l.reattachRelays(ctx, r)
	}
	l.Sweep(ctx)
}

// Run heartbeats this process's runs, fences the ones it lost and sweeps dead
// ones every HeartbeatEvery until ctx ends.
func (l *Liveness) Run(ctx context.Context, f Fencer) {
	t := time.NewTicker(l.cfg.HeartbeatEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := l.st.HeartbeatRuns(ctx, l.cfg.Owner); err != nil && ctx.Err() == nil {
				l.log.WarnContext(ctx, "heartbeat runs", "err", err)
			}
			if f != nil {
				f.Fence(ctx, l.Owns)
			}
			l.Sweep(ctx)
		}
	}
}

// Sweep marks runs whose process stopped heartbeating interrupted and expires
// the interactions they left pending, appending events so that every
// front-end shows it.
func (l *Liveness) Sweep(ctx context.Context) {
	runs, err := l.st.MarkStaleRunsInterrupted(ctx, time.Now().Add(-l.cfg.StaleAfter), l.relayedRuns()...)
	if err != nil {
		l.log.WarnContext(ctx, "mark stale runs", "err", err)
	}
	for _, r := range runs {
		l.log.InfoContext(ctx, "run of a stopped process marked interrupted", logkey.ChatID, r.ChatID, logkey.RunID, r.ID, "owner", r.Owner)
		l.append(ctx, r.ChatID, r.ID, agent.Event{Type: agent.EventRunInterrupted, Text: InterruptedByStop})
	}
	l.expireOrphans(ctx)
}

// Owns reports whether the database still has the run running under this
// process: after a partition longer than StaleAfter another replica may have
// marked it interrupted, or adopted it.
func (l *Liveness) Owns(ctx context.Context, runID string) (bool, error) {
	r, err := l.st.Run(ctx, runID)
	if err != nil {
		return false, err
	}
	return r.Status == runhub.StatusRunning && r.Owner == l.cfg.Owner, nil
}

// Reclaim frees the chat when its running run belongs to a process of this
// host that is gone (not merely silent) and has no relay that a `serve` could
// reattach: the run is marked interrupted with the usual message and its
// pending cards expire. It reports whether it freed the chat. Runs of other
// hosts, of live processes and of names that are not "host:pid" keep the
// heartbeat rule. prompt.Service calls it when a chat's run lock is taken.
func (l *Liveness) Reclaim(ctx context.Context, chatID string) (bool, error) {
	l.reclaimMu.Lock()
	defer l.reclaimMu.Unlock()
	r, ok, err := l.st.RunningRun(ctx, chatID)
	if err != nil || !ok {
		return false, err
	}
	if !l.deadLocalOwner(r) || l.relayed(string(r.ID)) {
		return false, nil
	}
	done, err := l.st.InterruptRun(ctx, r.ID, reasonOwnerExited)
	if err != nil || !done {
		return false, err
	}
	l.log.InfoContext(ctx, "run of an exited process marked interrupted", logkey.ChatID, r.ChatID, logkey.RunID, r.ID, "owner", r.Owner)
	l.append(ctx, r.ChatID, r.ID, agent.Event{Type: agent.EventRunInterrupted, Text: InterruptedByStop})
	l.expireOrphans(ctx)
	return true, nil
}

// deadLocalOwner reports whether r's owner is a "host:pid" of this host, not
// this process, whose process is gone: no such pid, or a pid taken by a
// process that started after the owner's last heartbeat.
func (l *Liveness) deadLocalOwner(r Run) bool {
	pid, ok := l.localPID(r.Owner)
	if !ok || pid == l.pid {
		return false
	}
	return !processAlive(pid, r.lastSeen())
}

// localPID parses owner as "host:pid" of this host.
func (l *Liveness) localPID(owner string) (int, bool) {
	h, p, ok := strings.Cut(owner, ":")
	if !ok || h != l.host {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	if err != nil || pid <= 0 {
		return 0, false
	}
	return pid, true
}

// otherLiveOwner reports whether owner is a live process of this host other
// than this one.
func (l *Liveness) otherLiveOwner(r Run) bool {
	pid, ok := l.localPID(r.Owner)
	if !ok || pid == l.pid {
		return false
	}
	return processAlive(pid, r.lastSeen())
}

// reattachRelays continues the runs whose agents survived the previous
// process under a relay in RelayDir, before the stale sweep could mark them
// interrupted. A run whose relay died is marked interrupted at once, with a
// message in its chat; a relay whose run ended is removed.
func (l *Liveness) reattachRelays(ctx context.Context, ra Reattacher) {
	dir := l.cfg.RelayDir
	if dir == "" {
		return
	}
	states, err := procrun.ListRelays(dir)
	if err != nil {
		l.log.WarnContext(ctx, "list relays", "err", err)
		return
	}
	for _, st := range states {
		run, err := l.st.Run(ctx, st.RunID)
		switch {
		case errors.Is(err, ErrNotFound), err == nil && run.Status != runhub.StatusRunning:
			if !st.Live {
				_ = procrun.RemoveRelay(dir, st.RunID)
			}
			continue
		case err != nil:
			l.log.WarnContext(ctx, "relay: read run", logkey.RunID, st.RunID, "err", err)
			continue
		case l.otherLiveOwner(run):
			continue // another process of this host follows it
		case !st.Reattachable():
			l.log.InfoContext(ctx, "relay of a run died, marking it interrupted", logkey.ChatID, run.ChatID, logkey.RunID, run.ID)
			ok, err := l.st.InterruptRun(ctx, run.ID, reasonRelayDied)
			if err != nil {
				l.log.WarnContext(ctx, "interrupt run", logkey.RunID, run.ID, "err", err)
				continue
			}
			if ok {
				l.append(ctx, run.ChatID, run.ID, agent.Event{Type: agent.EventRunInterrupted, Text: InterruptedByStop})
			}
			_ = procrun.RemoveRelay(dir, string(run.ID))
			continue
		}
		if _, err := ra.Reattach(ctx, run.ChatID, run.ID); err != nil {
			l.log.WarnContext(ctx, "reattach run", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "err", err)
			continue
		}
		l.log.InfoContext(ctx, "run reattached", logkey.ChatID, run.ChatID, logkey.RunID, run.ID, "previous_owner", run.Owner)
	}
}

// relayedRuns lists the runs whose agent lives on under a relay of this host
// (or whose output it journaled to the end): a stopped `serve` reattaches them
// at its next start, so no other process may mark them interrupted meanwhile.
func (l *Liveness) relayedRuns() []string {
	if l.cfg.RelayDir == "" {
		return nil
	}
	states, err := procrun.ListRelays(l.cfg.RelayDir)
	if err != nil {
		return nil
	}
	var ids []string
	for _, st := range states {
		if st.Reattachable() {
			ids = append(ids, st.RunID)
		}
	}
	return ids
}

// relayed reports whether runID is one of relayedRuns.
func (l *Liveness) relayed(runID string) bool {
	for _, id := range l.relayedRuns() {
		if id == runID {
			return true
		}
	}
	return false
}

// expireOrphans expires the interactions of runs that no longer run and
// appends their resolutions.
func (l *Liveness) expireOrphans(ctx context.Context) {
	expired, err := l.st.ExpireOrphanedInteractions(ctx)
	if err != nil {
		l.log.WarnContext(ctx, "expire interactions", "err", err)
	}
	for _, in := range expired {
		l.append(ctx, in.ChatID, in.RunID, agent.Event{
			Type:       agent.EventInteractionResolved,
			Resolution: &agent.Resolution{InteractionID: string(in.ID), Status: agent.StatusExpired},
		})
	}
}

func (l *Liveness) append(ctx context.Context, chatID agent.ChatID, runID agent.RunID, ev agent.Event) {
	b, err := json.Marshal(ev)
	if err != nil {
		l.log.ErrorContext(ctx, "encode event", logkey.ChatID, chatID, "type", ev.Type, "err", err)
		return
	}
	if _, err := l.events.Append(ctx, chatID, runID, string(ev.Type), b); err != nil {
		l.log.WarnContext(ctx, "append event", logkey.ChatID, chatID, "type", ev.Type, "err", err)
	}
}
