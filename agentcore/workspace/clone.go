package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Clone makes dir the main clone of src (a git URL or a host path) with base
// checked out and HEAD detached, so that later moves of refs/heads/<base>
// (Merge) never change dir's files or status. Its git directory is made
// readable (not writable) by every user and kept so
// (core.sharedRepository=0644), and dir traversable: the chats' clones,
// made as the agent's user, borrow its objects. A dir that already is a
// clone of src is checked (Check), made readable again and kept, so a
// restart just goes on. It fails with ErrBaseMissing when src has no branch
// base, ErrCloneFailed when src cannot be cloned; git removes what it had
// started.
func (g *Git) Clone(ctx context.Context, src, dir, base string) error {
	if src == "" || base == "" || !filepath.IsAbs(dir) {
		return invalid("clone needs a source, a base branch and an absolute directory")
	}
	if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
		return g.reuseClone(ctx, src, dir, base)
	}
	_, err := g.bot("").exec(ctx, call{
		args: []string{"clone", "--quiet", "--origin", "origin", "--branch", base,
			"--config", "core.sharedRepository=0644", "--", src, dir},
		timeout: g.cloneTimeout,
	})
	if err != nil {
		return cloneError(err, base)
	}
	if err := g.baseExists(ctx, dir, base); err != nil { // base named a tag
		os.RemoveAll(dir)
		return err
	}
	if _, err := g.bot(dir).run(ctx, "checkout", "--quiet", "--detach"); err != nil {
		return fmt.Errorf("%w: detaching the main clone's HEAD: %w", ErrCloneFailed, err)
	}
	return shareObjects(dir)
}

// shareObjects makes the main clone at dir readable by the agent's user,
// whose clones borrow its objects: dir itself traversable (not listable),
// everything in its git directory readable and its directories
// traversable, but the bot's registry. Nothing becomes writable.
func shareObjects(dir string) error {
	if err := addMode(dir, 0o001); err != nil {
		return err
	}
	gitDir := filepath.Join(dir, ".git")
	registry := filepath.Join(gitDir, "threadline")
	return filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == registry:
			return fs.SkipDir
		case d.IsDir():
			return addMode(p, 0o055)
		case d.Type().IsRegular():
			return addMode(p, 0o044)
		}
		return nil
	})
}

// addMode adds the permission bits add to p's.
func addMode(p string, add fs.FileMode) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&add == add {
		return nil
	}
	return os.Chmod(p, fi.Mode().Perm()|add)
}

// reuseClone accepts an existing main clone of the same source.
func (g *Git) reuseClone(ctx context.Context, src, dir, base string) error {
	main := g.bot(dir)
	url, err := main.run(ctx, "config", "--get", "remote.origin.url")
	if err != nil || url != src {
		return fmt.Errorf("%w: %s already holds another repository (origin %q)", ErrCloneFailed, dir, url)
	}
	if err := g.Check(ctx, dir, base); err != nil {
		return err
	}
	if _, err := main.run(ctx, "config", "core.sharedRepository", "0644"); err != nil {
		return err
	}
	return shareObjects(dir)
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

// Check is doctor's look at a main clone (or a loose repository chats are
// cloned from): it is a git repository (ErrNotRepo), base exists
// (ErrBaseMissing), and base is checked out in no working tree, so Merge can
// land on it (ErrBaseCheckedOut).
func (g *Git) Check(ctx context.Context, dir, base string) error {
	if _, err := g.bot(dir).run(ctx, "rev-parse", "--git-dir"); err != nil {
		return err
	}
	if err := g.baseExists(ctx, dir, base); err != nil {
		return err
	}
	return g.baseFree(ctx, dir, base)
}

// IsRepo tells whether dir is the top of a git working tree (a channel's
// work directory that is a repository; chats are then cloned from it). It
// runs on the bot's side: dir must be the operator's, never a chat's. A
// missing directory or one inside another repository is not.
func (g *Git) IsRepo(ctx context.Context, dir string) (bool, error) {
	if _, err := os.Stat(dir); err != nil {
		return false, nil
	}
	top, err := g.bot(dir).run(ctx, "rev-parse", "--show-toplevel")
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
	ok, err := g.bot(dir).hasRef(ctx, "refs/heads/"+base)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("branch %q: %w", base, ErrBaseMissing)
	}
	return nil
}

// baseFree fails with ErrBaseCheckedOut when a working tree of dir's
// repository (its own or a git worktree of it) has base checked out.
func (g *Git) baseFree(ctx context.Context, dir, base string) error {
	out, err := g.bot(dir).exec(ctx, call{args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return err
	}
	var tree string
	for attr := range strings.SplitSeq(string(out), "\x00") {
		key, value, _ := strings.Cut(attr, " ")
		switch {
		case key == "worktree":
			tree = value
		case key == "branch" && value == "refs/heads/"+base:
			return fmt.Errorf("%w: %s is checked out in %s (detach it there: git checkout --detach)", ErrBaseCheckedOut, base, tree)
		}
	}
	return nil
}

// hasRef tells whether ref names a commit in r.
func (r repo) hasRef(ctx context.Context, ref string) (bool, error) {
	return r.test(ctx, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
}

// refID is the commit ref names in r, or "" when there is none.
func (r repo) refID(ctx context.Context, ref string) (string, error) {
	out, err := r.exec(ctx, call{args: []string{"rev-parse", "--verify", "--quiet", ref + "^{commit}"}})
	if ge, ok := errors.AsType[*GitError](err); ok && ge.Code == 1 && ge.Err == nil && ge.Stderr == "" {
		return "", nil
	}
	return strings.TrimSpace(string(out)), err
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

// HeadBranch is the branch checked out in the repository at dir (a channel
// work directory that is a repository: its chats' base), run on the bot's
// side; ErrBaseMissing when its HEAD is detached.
func (g *Git) HeadBranch(ctx context.Context, dir string) (string, error) {
	b, err := g.bot(dir).run(ctx, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil || b == "" {
		return "", fmt.Errorf("%w: %s has no branch checked out (detached HEAD)", ErrBaseMissing, dir)
	}
	return b, nil
}

// DefaultBranch is the branch src's HEAD names (a project added without
// --base), run on the bot's side; ErrCloneFailed when src cannot be read.
func (g *Git) DefaultBranch(ctx context.Context, src string) (string, error) {
	out, err := g.bot("").run(ctx, "ls-remote", "--symref", "--", src, "HEAD")
	if err != nil {
		return "", cloneError(err, "HEAD")
	}
	for _, line := range strings.Split(out, "\n") {
		if ref, ok := strings.CutPrefix(line, "ref: refs/heads/"); ok {
			if b, _, ok := strings.Cut(ref, "\t"); ok && b != "" {
				return b, nil
			}
		}
	}
	return "", fmt.Errorf("%w: %s names no default branch: give --base", ErrBaseMissing, src)
}
