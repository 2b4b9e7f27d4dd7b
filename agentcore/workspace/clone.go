package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Clone makes dir the main clone of src (a git URL or a host path) with base
// checked out and HEAD detached, so that later moves of refs/heads/<base>
// (Merge) never change dir's files or status. A dir that already is a clone
// of src is checked (Check) and kept, so a restart just goes on. It fails
// with ErrBaseMissing when src has no branch base, ErrCloneFailed when src
// cannot be cloned; git removes what it had started.
func (g *Git) Clone(ctx context.Context, src, dir, base string) error {
	if src == "" || base == "" || !filepath.IsAbs(dir) {
		return invalid("clone needs a source, a base branch and an absolute directory")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return g.reuseClone(ctx, src, dir, base)
	}
	_, err := g.exec(ctx, call{
		args:    []string{"clone", "--quiet", "--origin", "origin", "--branch", base, "--", src, dir},
		timeout: g.cloneTimeout,
	})
	if err != nil {
		return cloneError(err, base)
	}
	if err := g.baseExists(ctx, dir, base); err != nil { // base named a tag
		os.RemoveAll(dir)
		return err
	}
	if _, err := g.run(ctx, dir, "checkout", "--quiet", "--detach"); err != nil {
		return fmt.Errorf("%w: detaching the main clone's HEAD: %w", ErrCloneFailed, err)
	}
	return nil
}

// reuseClone accepts an existing main clone of the same source.
func (g *Git) reuseClone(ctx context.Context, src, dir, base string) error {
	url, err := g.run(ctx, dir, "config", "--get", "remote.origin.url")
	if err != nil || url != src {
		return fmt.Errorf("%w: %s already holds another repository (origin %q)", ErrCloneFailed, dir, url)
	}
	return g.Check(ctx, dir, base)
}

// cloneError words a failed clone.
func cloneError(err error, base string) error {
	ge, ok := errors.AsType[*GitError](err)
	if !ok || ge.Err != nil {
		return fmt.Errorf("%w: %w", ErrCloneFailed, err)
	}
	if strings.Contains(ge.Stderr, "not found in upstream") {
		ge.Err = ErrBaseMissing
		return fmt.Errorf("branch %q: %w", base, ge)
	}
	ge.Err = ErrCloneFailed
	return ge
}

// Check is doctor's look at a main clone (or a loose repository worktrees
// are made from): it is a git repository (ErrNotRepo), base exists
// (ErrBaseMissing), and base is checked out in no working tree, so Merge can
// land on it (ErrBaseCheckedOut).
func (g *Git) Check(ctx context.Context, dir, base string) error {
	if _, err := g.run(ctx, dir, "rev-parse", "--git-dir"); err != nil {
		return err
	}
	if err := g.baseExists(ctx, dir, base); err != nil {
		return err
	}
	return g.baseFree(ctx, dir, base)
}

// IsRepo tells whether dir is the top of a git working tree (a channel's
// work directory that is a repository; worktrees are then made from it). A
// missing directory or one inside another repository is not.
func (g *Git) IsRepo(ctx context.Context, dir string) (bool, error) {
	if _, err := os.Stat(dir); err != nil {
		return false, nil
	}
	top, err := g.run(ctx, dir, "rev-parse", "--show-toplevel")
	if ge, ok := errors.AsType[*GitError](err); ok && (ge.Err == ErrNotRepo || strings.Contains(ge.Stderr, "must be run in a work tree")) {
		return false, nil // no repository, or a bare one
	}
	if err != nil {
		return false, err
	}
	return samePath(top, dir), nil
}

// baseExists fails with ErrBaseMissing when refs/heads/<base> is no commit.
func (g *Git) baseExists(ctx context.Context, dir, base string) error {
	ok, err := g.hasRef(ctx, dir, "refs/heads/"+base)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("branch %q: %w", base, ErrBaseMissing)
	}
	return nil
}

// baseFree fails with ErrBaseCheckedOut when a working tree of dir's
// repository has base checked out.
func (g *Git) baseFree(ctx context.Context, dir, base string) error {
	trees, err := g.List(ctx, dir)
	if err != nil {
		return err
	}
	for _, t := range trees {
		if t.Branch == base {
			return fmt.Errorf("%w: %s is checked out in %s (detach it there: git checkout --detach)", ErrBaseCheckedOut, base, t.Dir)
		}
	}
	return nil
}

// hasRef tells whether ref names a commit.
func (g *Git) hasRef(ctx context.Context, dir, ref string) (bool, error) {
	return g.test(ctx, dir, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
}

// samePath tells whether a and b name the same directory, following links.
func samePath(a, b string) bool {
	if a == b {
		return true
	}
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	return err1 == nil && err2 == nil && ra == rb
}
