// Adopting a run another process started: the lock of a run that survived its
// process (under a relay) passes to this hub.

package runhub

import (
	"context"
	"errors"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// ErrNotAdoptable is returned by Adopt when the store cannot reassign runs.
var ErrNotAdoptable = errors.New("runhub: store cannot adopt runs")

// Adopter is implemented by stores that let a process take over a running run.
type Adopter interface {
	// AdoptRun makes owner the owner of the running run and refreshes its
	// heartbeat. A run that is not running is an error.
	AdoptRun(ctx context.Context, runID agent.RunID, owner string) error
}

// Adopt takes the memory lock of run's chat for a run that is already
// running in the store (started by another process, whose agent survived it)
// and records this hub's owner on it. The lease is released as for Acquire.
func (h *Hub) Adopt(ctx context.Context, run RunRecord) (*Lease, error) {
	ad, ok := h.st.(Adopter)
	if !ok {
		return nil, ErrNotAdoptable
	}
	if run.ID == "" || run.ChatID == "" {
		return nil, errors.New("runhub: adopt: run id and chat id are required")
	}
	if run.Owner == "" {
		run.Owner = h.opts.Owner
	}
	h.mu.Lock()
	if cur, busy := h.running[run.ChatID]; busy {
		h.mu.Unlock()
		return nil, fmt.Errorf("runhub: adopt run %s: chat %s has run %s in this process", run.ID, run.ChatID, cur)
	}
	h.running[run.ChatID] = run.ID
	h.stale[run.ChatID] = struct{}{}
	h.mu.Unlock()
	if err := ad.AdoptRun(ctx, run.ID, run.Owner); err != nil {
		h.unlock(run.ChatID, run.ID)
		return nil, fmt.Errorf("runhub: adopt run %s: %w", run.ID, err)
	}
	return &Lease{hub: h, run: run}, nil
}

// Abandon frees the chat in this hub but leaves the run running in the store,
// for a later process to adopt (a run detached from its relay at shutdown).
// Like Release, only the first call of either does anything.
func (l *Lease) Abandon() {
	l.once.Do(func() { l.hub.unlock(l.run.ChatID, l.run.ID) })
}
