package workspace

import (
	"context"
	"path/filepath"
)

// spareReason is the lock reason that marks a ready spare worktree.
const spareReason = "threadline spare"

// spareBusy is the lock reason of a spare still being checked out.
const spareBusy = "threadline spare (preparing)"

// Spare makes a spare worktree at dir: base checked out on a detached HEAD,
// locked so that nothing prunes or uses it. The next Create or Fork of main
// whose Dir is in the same directory as dir takes it over (a rename, then a
// checkout of only the files that differ) instead of writing every file of
// the tree: on a large repository and a slow disk, milliseconds instead of
// seconds. A spare of a base that moved since is still taken and brought up
// to date. Making spares, where and how many (one, refilled in the background
// after each Create, is enough), is the caller's policy; DropSpares removes
// them.
func (g *Git) Spare(ctx context.Context, main, base, dir string) error {
	if !filepath.IsAbs(main) || !filepath.IsAbs(dir) {
		return invalid("a spare needs absolute paths")
	}
	if err := g.baseExists(ctx, main, base); err != nil {
		return err
	}
	if err := dirFree(dir); err != nil {
		return err
	}
	// Locked from the start (as busy), marked ready once checked out, so a
	// Create never takes a half-written spare.
	if _, err := g.run(ctx, main, "worktree", "add", "--quiet", "--detach", "--lock", "--reason", spareBusy, dir, "refs/heads/"+base); err != nil {
		return err
	}
	return g.lockSpare(ctx, main, dir)
}

// lockSpare marks the worktree at dir as a ready spare.
func (g *Git) lockSpare(ctx context.Context, main, dir string) error {
	if _, err := g.run(ctx, main, "worktree", "unlock", dir); err != nil {
		return err
	}
	_, err := g.run(ctx, main, "worktree", "lock", "--reason", spareReason, dir)
	return err
}

// takeSpare moves one of spares to wt.Dir and checks out wt.Branch there.
// A spare another Create took first (its unlock fails) or that cannot move
// is passed over; false means none was taken.
func (g *Git) takeSpare(ctx context.Context, wt Worktree, spares []Entry) (bool, error) {
	for _, s := range spares {
		if _, err := g.run(ctx, wt.Main, "worktree", "unlock", s.Dir); err != nil {
			continue
		}
		if _, err := g.run(ctx, wt.Main, "worktree", "move", s.Dir, wt.Dir); err != nil {
			g.lockSpare(context.WithoutCancel(ctx), wt.Main, s.Dir) // best effort: give it back
			continue
		}
		if _, err := g.run(ctx, wt.Dir, "checkout", "--quiet", wt.Branch); err != nil {
			g.run(context.WithoutCancel(ctx), wt.Main, "worktree", "remove", "--force", wt.Dir) // best effort
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// DropSpares removes the spare worktrees of main (at shutdown, or when its
// base changes for good).
func (g *Git) DropSpares(ctx context.Context, main string) error {
	trees, err := g.List(ctx, main)
	if err != nil {
		return err
	}
	for _, t := range trees {
		if t.Spare || t.LockReason == spareBusy {
			if _, err := g.run(ctx, main, "worktree", "remove", "--force", "--force", t.Dir); err != nil {
				return err
			}
		}
	}
	return nil
}
