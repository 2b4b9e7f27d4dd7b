// home.go: what a person's home page on a platform lists (the Slack App
// Home): their recent threads of a workspace and the runs running there,
// read from the store so that it survives a restart.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// HomeThread is a thread as a person's home page lists it.
type HomeThread struct {
	Place  Place
	ChatID agent.ChatID
	// Title is the chat's title, else its first prompt (not scrubbed: see
	// Desk.Scrub).
	Title string
	// Status, Started and Ended are those of the person's latest run in the chat
	// ("running", "completed", "failed", "interrupted"); Ended is zero while
	// it runs.
	Status  string
	Started time.Time
	Ended   time.Time
}

// Running reports whether the thread's latest run runs now.
func (h HomeThread) Running() bool { return h.Status == "running" }

// HomeStore is an optional interface of the Store given to NewDesk: the
// threads a person's home page lists (store.Store through chatstore).
type HomeStore interface {
	// HomeThreads returns up to limit threads of the platform's workspace in
	// which by (platform-qualified) started a run: those running now first,
	// then by by's latest run there, newest first.
	HomeThreads(ctx context.Context, platform, workspace, by string, limit int) ([]HomeThread, error)
	// ThreadStarters returns up to limit people (platform-qualified) who
	// started runs in the chat bound to p, the most recent first.
	ThreadStarters(ctx context.Context, p Place, limit int) ([]string, error)
}

// ErrNoHomeStore is returned when the desk's store keeps no home pages.
var ErrNoHomeStore = errors.New("chatops: the store lists no home threads")

// HomeThreads returns up to limit threads of the workspace in which u
// started runs, for u's home page (HomeStore.HomeThreads).
func (t *Desk) HomeThreads(ctx context.Context, u User, workspace string, limit int) ([]HomeThread, error) {
	hs, ok := t.store.(HomeStore)
	if !ok {
		return nil, ErrNoHomeStore
	}
	out, err := hs.HomeThreads(ctx, u.Platform, workspace, u.Qualified(), limit)
	if err != nil {
		return nil, fmt.Errorf("chatops: home threads of %s: %w", u.Qualified(), err)
	}
	return out, nil
}

// HomeViewers returns up to limit people of p's platform whose home page
// lists the thread: those who started runs in its chat, the most recent
// first.
func (t *Desk) HomeViewers(ctx context.Context, p Place, limit int) ([]User, error) {
	hs, ok := t.store.(HomeStore)
	if !ok {
		return nil, ErrNoHomeStore
	}
	qs, err := hs.ThreadStarters(ctx, p, limit)
	if err != nil {
		return nil, fmt.Errorf("chatops: home viewers of %s: %w", p, err)
	}
	var out []User
	for _, q := range qs {
		if u := ParseUser(q); u.Platform == p.Platform && strings.TrimSpace(u.ID) != "" {
			out = append(out, u)
		}
	}
	return out, nil
}
