package forge

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// current is a pull request as a driver reads it.
type current struct {
	Number            int
	URL               string
	State             State
	Title, Body, Base string
}

func (c current) info(opened bool) PRInfo {
	return PRInfo{Number: c.Number, URL: c.URL, State: c.State, Opened: opened}
}

// change is what an update writes: the fields of the request that differ
// from the pull request's (nil: kept).
type change struct {
	Title, Body, Base *string
}

// driver is one forge's API, in the terms EnsurePR needs. Its errors are
// already the package's (scrubbed, wrapping a sentinel).
type driver interface {
	// get reads pull request number of pr's repository.
	get(ctx context.Context, pr PR, number int) (current, error)
	// findOpen returns the open pull request whose head is pr.Head in pr's
	// repository, or nil.
	findOpen(ctx context.Context, pr PR) (*current, error)
	// create opens pr.
	create(ctx context.Context, pr PR) (current, error)
	// update writes ch to pull request number.
	update(ctx context.Context, pr PR, number int, ch change) (current, error)
}

// branchLocks serializes the EnsurePR calls of one Forge for one branch:
// Gitea 1.27 opens a second pull request for a head when two creations race
// (measured: both calls found none, both opened one), so the check and the
// creation must not interleave. GitHub and GitLab refuse the second (422,
// 409), which ensure handles for racing processes.
type branchLocks struct {
	mu    sync.Mutex
	locks map[string]*branchLock
}

type branchLock struct {
	sem  chan struct{}
	refs int
}

// lock takes the lock of key, or returns ctx's error; unlock releases it.
func (b *branchLocks) lock(ctx context.Context, key string) (unlock func(), err error) {
	b.mu.Lock()
	if b.locks == nil {
		b.locks = map[string]*branchLock{}
	}
	l := b.locks[key]
	if l == nil {
		l = &branchLock{sem: make(chan struct{}, 1)}
		b.locks[key] = l
	}
	l.refs++
	b.mu.Unlock()
	release := func() {
		b.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(b.locks, key)
		}
		b.mu.Unlock()
	}
	select {
	case l.sem <- struct{}{}:
		return func() { <-l.sem; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// ensure is EnsurePR over a driver, one call at a time per branch.
func ensure(ctx context.Context, locks *branchLocks, d driver, pr PR) (PRInfo, error) {
	if err := pr.check(); err != nil {
		return PRInfo{}, err
	}
	unlock, err := locks.lock(ctx, pr.Owner+"/"+pr.Repo+"\x00"+pr.Head)
	if err != nil {
		return PRInfo{}, fmt.Errorf("wait for the other call on %s of %s: %w", pr.Head, pr.repoName(), err)
	}
	defer unlock()
	var cur current
	switch {
	case pr.Number > 0:
		c, err := d.get(ctx, pr, pr.Number)
		if err != nil {
			return PRInfo{}, err
		}
		cur = c
	default:
		c, err := d.findOpen(ctx, pr)
		if err != nil {
			return PRInfo{}, err
		}
		if c == nil {
			created, err := d.create(ctx, pr)
			if err == nil {
				return created.info(true), nil
			}
			// Another call may have opened it since findOpen: the forge
			// refuses a second one for the same head, and that one is ours.
			if !errors.Is(err, ErrRejected) {
				return PRInfo{}, err
			}
			if c, _ = d.findOpen(ctx, pr); c == nil {
				return PRInfo{}, err
			}
		}
		cur = *c
	}
	var ch change
	if cur.Title != pr.Title {
		ch.Title = &pr.Title
	}
	if cur.Body != pr.Body {
		ch.Body = &pr.Body
	}
	if cur.Base != pr.Base {
		ch.Base = &pr.Base
	}
	if ch == (change{}) {
		return cur.info(false), nil
	}
	upd, err := d.update(ctx, pr, cur.Number, ch)
	if err != nil {
		return PRInfo{}, err
	}
	return upd.info(false), nil
}
