package workspace

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// Spare makes a spare chat clone at dir: a clone of main (made like a
// chat's, on the agent's side through agent, with dir made by
// Options.MakeDir when missing) with base checked out on a detached HEAD,
// recorded as ready once made, so that nothing takes it half made. The
// next Create or Fork of main on base whose Dir is in the same directory
// as dir takes it over (a rename, then a checkout of only the files that
// differ) instead of writing every file of the tree: on a large repository
// and a slow disk, milliseconds instead of seconds. A spare of a base that
// moved since is still taken and brought up to date. Making spares, where
// and how many (one, refilled in the background after each Create, is
// enough), is the caller's policy; agent should confine git to dir, as a
// chat's hook confines it to the chat's directory; the taker's Agent hook
// then works in it. DropSpares removes them.
func (g *Git) Spare(ctx context.Context, main, base, dir string, agent func(*exec.Cmd)) error {
	if !filepath.IsAbs(main) || !filepath.IsAbs(dir) {
		return invalid("a spare needs absolute paths")
	}
	main, dir = filepath.Clean(main), filepath.Clean(dir)
	r, err := g.agentRepo(dir, agent)
	if err != nil {
		return err
	}
	if err := g.baseExists(ctx, main, base); err != nil {
		return err
	}
	baseID, err := g.bot(main).refID(ctx, "refs/heads/"+base)
	if err != nil {
		return err
	}
	reg, err := g.registry(ctx, main)
	if err != nil {
		return err
	}
	if _, ok, err := reg.get(dir); err != nil || ok {
		if err == nil {
			err = invalid("%s is recorded already", dir)
		}
		return err
	}
	if err := dirFree(dir); err != nil {
		return err
	}
	rec := record{Dir: dir, Base: base, Spare: true}
	if err := reg.put(rec); err != nil {
		return err
	}
	err = g.cloneInto(ctx, r, main, base)
	if err == nil {
		_, err = r.run(ctx, "checkout", "--quiet", "--detach", baseID)
	}
	if err == nil {
		_, err = r.run(ctx, "update-ref", "-d", "refs/heads/"+base)
	}
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		if dirExists(dir) {
			err = errors.Join(err, g.removeDir(cleanup, dir))
		}
		return errors.Join(err, reg.del(dir))
	}
	rec.Ready = true
	return reg.put(rec)
}

// takeSpare moves a ready spare of wt.Base beside wt.Dir to wt.Dir and
// checks wt.Branch out there at start, on wt's side. A spare another
// Create claimed first or that cannot move is passed over; false means
// none was taken. A spare taken but not brought to wt's branch is removed.
func (g *Git) takeSpare(ctx context.Context, reg registry, wt Worktree, start, baseID string) (bool, error) {
	recs, err := reg.list()
	if err != nil {
		return false, err
	}
	for _, s := range recs {
		if !s.Spare || !s.Ready || s.Base != wt.Base || !samePath(filepath.Dir(s.Dir), filepath.Dir(wt.Dir)) {
			continue
		}
		if !reg.claim(s.Dir) {
			continue
		}
		if err := os.Rename(s.Dir, wt.Dir); err != nil { // onto wt.Dir if it is an empty directory
			if err := reg.unclaim(s.Dir); err != nil {
				return false, err
			}
			continue
		}
		if err := reg.dropClaim(s.Dir); err != nil {
			return true, err
		}
		chat, err := g.chat(wt)
		if err != nil {
			return true, err
		}
		return true, g.checkoutBranch(ctx, chat, wt.Branch, start, wt.Base, baseID)
	}
	return false, nil
}

// DropSpares removes the spares of main, made or being made (at shutdown,
// or when its base changes for good), with Options.RemoveDir.
func (g *Git) DropSpares(ctx context.Context, main string) error {
	reg, err := g.registry(ctx, main)
	if err != nil {
		return err
	}
	recs, err := reg.list()
	if err != nil {
		return err
	}
	for _, s := range recs {
		if !s.Spare || !reg.claim(s.Dir) {
			continue
		}
		if dirExists(s.Dir) {
			if err := g.removeDir(ctx, s.Dir); err != nil {
				return errors.Join(err, reg.unclaim(s.Dir))
			}
		}
		if err := reg.dropClaim(s.Dir); err != nil {
			return err
		}
	}
	return nil
}
