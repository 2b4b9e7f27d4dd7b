package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Worktree is one chat's working tree. The caller keeps its four fields
// (they are all Create needs to find it again).
type Worktree struct {
	Main   string // the repository it belongs to: a project's main clone or a loose repository
	Dir    string // its own directory, outside Main
	Branch string // its branch, without "refs/heads/"
	Base   string // the branch it started from and lands on, without "refs/heads/"
}

// Entry is one working tree of a repository, as git lists it.
type Entry struct {
	Dir        string
	Branch     string // without "refs/heads/"; "" when detached
	Head       string // the commit checked out
	Bare       bool
	Locked     bool
	LockReason string
	Spare      bool // a spare worktree (Spare), ready for a Create to take
	Prunable   bool // its directory is gone; Prune forgets it
}

// Create makes wt: a new worktree at wt.Dir on a new branch wt.Branch from
// wt.Base (taking a spare beside wt.Dir when there is one, see Spare), then
// copies the ignored files .worktreeinclude names (Include).
// It is idempotent: when wt.Branch already is checked out at wt.Dir the
// worktree is returned as it is, and an existing branch without a worktree
// (removed without discarding) is checked out again. It fails with
// ErrBaseMissing, ErrBranchInUse (checked out elsewhere) or ErrDirInUse.
// The returned Worktree has absolute, clean paths.
func (g *Git) Create(ctx context.Context, wt Worktree) (Worktree, error) {
	wt, err := g.prepare(ctx, wt)
	if err != nil {
		return wt, err
	}
	found, spares, err := g.existing(ctx, wt)
	if found || err != nil {
		return wt, err
	}
	if err := g.baseExists(ctx, wt.Main, wt.Base); err != nil {
		return wt, err
	}
	if err := g.addWorktree(ctx, wt, "refs/heads/"+wt.Base, spares); err != nil {
		return wt, err
	}
	return wt, g.Include(ctx, wt)
}

// Fork makes wt a new worktree that starts where parent is: its branch
// starts at parent's HEAD commit and parent's uncommitted work (modified,
// deleted and untracked files that are not ignored) is copied in as
// uncommitted work, from a Snapshot, so parent's files, index and HEAD are
// never touched. wt.Base "" is parent's base. Like Create it is idempotent
// and copies the .worktreeinclude files.
func (g *Git) Fork(ctx context.Context, parent, wt Worktree) (Worktree, error) {
	if wt.Main == "" {
		wt.Main = parent.Main
	}
	if wt.Base == "" {
		wt.Base = parent.Base
	}
	wt, err := g.prepare(ctx, wt)
	if err != nil {
		return wt, err
	}
	found, spares, err := g.existing(ctx, wt)
	if found || err != nil {
		return wt, err
	}
	head, err := g.run(ctx, parent.Dir, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return wt, err
	}
	state, err := g.Snapshot(ctx, parent)
	if err != nil {
		return wt, err
	}
	if err := g.addWorktree(ctx, wt, head, spares); err != nil {
		return wt, err
	}
	if err := g.applyState(ctx, wt.Dir, state); err != nil {
		return wt, err
	}
	return wt, g.Include(ctx, wt)
}

// prepare checks wt's fields and makes its paths absolute and clean.
func (g *Git) prepare(ctx context.Context, wt Worktree) (Worktree, error) {
	if !filepath.IsAbs(wt.Main) || !filepath.IsAbs(wt.Dir) || wt.Branch == "" || wt.Base == "" {
		return wt, invalid("a worktree needs absolute Main and Dir, a Branch and a Base")
	}
	wt.Main, wt.Dir = filepath.Clean(wt.Main), filepath.Clean(wt.Dir)
	if ok, err := g.test(ctx, wt.Main, "check-ref-format", "refs/heads/"+wt.Branch); err != nil || !ok {
		return wt, invalid("%q is not a valid branch name", wt.Branch)
	}
	return wt, nil
}

// existing looks for wt's branch among Main's worktrees: found at wt.Dir it
// is reused; found elsewhere it is ErrBranchInUse; registered at a
// directory that is gone it is pruned, and wt is made anew. It also returns
// the spares wt may take (Spare).
func (g *Git) existing(ctx context.Context, wt Worktree) (bool, []Entry, error) {
	trees, err := g.List(ctx, wt.Main)
	if err != nil {
		return false, nil, err
	}
	var spares []Entry
	for _, t := range trees {
		switch {
		case t.Spare:
			if samePath(filepath.Dir(t.Dir), filepath.Dir(wt.Dir)) {
				spares = append(spares, t)
			}
		case t.Branch != wt.Branch && samePath(t.Dir, wt.Dir):
			return false, nil, fmt.Errorf("%w: %s is the worktree of %s", ErrDirInUse, wt.Dir, cmp.Or(t.Branch, "a detached HEAD"))
		case t.Branch != wt.Branch:
		case t.Prunable:
			return false, spares, g.Prune(ctx, wt.Main)
		case samePath(t.Dir, wt.Dir):
			return true, nil, nil
		default:
			return false, nil, fmt.Errorf("%w: %s is checked out in %s", ErrBranchInUse, wt.Branch, t.Dir)
		}
	}
	return false, spares, nil
}

// addWorktree makes wt's worktree on its branch, created from start unless
// it exists: from a spare when there is one, else with git worktree add.
// The branch is made first, on its own, so that a worktree add that met
// another one being added can simply be tried again (exec).
func (g *Git) addWorktree(ctx context.Context, wt Worktree, start string, spares []Entry) error {
	if err := dirFree(wt.Dir); err != nil {
		return err
	}
	exists, err := g.hasRef(ctx, wt.Main, "refs/heads/"+wt.Branch)
	if err != nil {
		return err
	}
	if !exists {
		if _, err := g.run(ctx, wt.Main, "branch", "--no-track", wt.Branch, start); err != nil {
			return err
		}
	}
	if taken, err := g.takeSpare(ctx, wt, spares); taken || err != nil {
		return err
	}
	_, err = g.run(ctx, wt.Main, "worktree", "add", "--quiet", wt.Dir, wt.Branch)
	return err
}

// dirFree fails with ErrDirInUse when dir exists and is not empty.
func dirFree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s exists and is not empty", ErrDirInUse, dir)
	}
	return nil
}

// applyState makes dir's files those of tree, as uncommitted work over its
// HEAD: read-tree switches index and files to tree, reset puts the index
// back on HEAD (so the differences show as changes, new files as untracked).
func (g *Git) applyState(ctx context.Context, dir string, tree Tree) error {
	head, err := g.run(ctx, dir, "rev-parse", "HEAD^{tree}")
	if err != nil || Tree(head) == tree {
		return err
	}
	if _, err := g.run(ctx, dir, "read-tree", "-m", "-u", "HEAD", string(tree)); err != nil {
		return err
	}
	_, err = g.run(ctx, dir, "reset", "--quiet")
	return err
}

// Remove removes wt's worktree, and its branch when discard is set or the
// branch is merged into wt.Base. Without discard, uncommitted work or
// commits that neither a remote nor the base holds make it fail with an
// *UnpushedError (ErrUnpushed) that says what would be lost, and nothing is
// removed. A worktree whose directory is already gone is forgotten.
func (g *Git) Remove(ctx context.Context, wt Worktree, discard bool) error {
	if !filepath.IsAbs(wt.Main) || !filepath.IsAbs(wt.Dir) || wt.Branch == "" {
		return invalid("a worktree needs absolute Main and Dir and a Branch")
	}
	if !discard {
		p, err := g.Unpushed(ctx, wt)
		if err != nil {
			return err
		}
		if !p.Clean() {
			return &UnpushedError{Branch: wt.Branch, Commits: p.Commits, Files: p.Files}
		}
	}
	if err := g.removeTree(ctx, wt, discard); err != nil {
		return err
	}
	drop := discard
	if !drop && wt.Base != "" {
		merged, err := g.test(ctx, wt.Main, "merge-base", "--is-ancestor", "refs/heads/"+wt.Branch, "refs/heads/"+wt.Base)
		if err != nil && !isMissingRef(err) {
			return err
		}
		drop = merged
	}
	if !drop {
		return nil
	}
	return g.deleteBranch(ctx, wt)
}

// removeTree removes the worktree's directory and git's record of it. A
// directory git no longer knows as a worktree is deleted only when
// discarding.
func (g *Git) removeTree(ctx context.Context, wt Worktree, discard bool) error {
	_, err := g.run(ctx, wt.Main, "worktree", "remove", "--force", wt.Dir)
	if err == nil {
		return nil
	}
	if _, statErr := os.Stat(wt.Dir); errors.Is(statErr, os.ErrNotExist) {
		return g.Prune(ctx, wt.Main)
	}
	if !discard || !strings.Contains(err.Error(), "is not a working tree") {
		return err
	}
	if err := os.RemoveAll(wt.Dir); err != nil {
		return err
	}
	return g.Prune(ctx, wt.Main)
}

// deleteBranch deletes wt's branch; one already gone is fine.
func (g *Git) deleteBranch(ctx context.Context, wt Worktree) error {
	exists, err := g.hasRef(ctx, wt.Main, "refs/heads/"+wt.Branch)
	if err != nil || !exists {
		return err
	}
	_, err = g.run(ctx, wt.Main, "branch", "--quiet", "-D", wt.Branch)
	return err
}

// isMissingRef tells a git error about a ref that does not exist.
func isMissingRef(err error) bool {
	ge, ok := errors.AsType[*GitError](err)
	return ok && (strings.Contains(ge.Stderr, "Not a valid") || strings.Contains(ge.Stderr, "unknown revision"))
}

// List is the working trees of the repository main (its own first), for gc:
// the caller decides from its database which are idle.
func (g *Git) List(ctx context.Context, main string) ([]Entry, error) {
	out, err := g.exec(ctx, call{dir: main, args: []string{"worktree", "list", "--porcelain", "-z"}})
	if err != nil {
		return nil, err
	}
	return parseWorktrees(string(out)), nil
}

// parseWorktrees reads `git worktree list --porcelain -z`: attributes
// separated by NUL, worktrees by an empty attribute.
func parseWorktrees(out string) []Entry {
	var list []Entry
	var cur *Entry
	for attr := range strings.SplitSeq(out, "\x00") {
		if attr == "" {
			cur = nil
			continue
		}
		key, value, _ := strings.Cut(attr, " ")
		if key == "worktree" {
			list = append(list, Entry{Dir: value})
			cur = &list[len(list)-1]
			continue
		}
		if cur != nil {
			cur.set(key, value)
		}
	}
	return list
}

// set records one attribute of a worktree list entry.
func (e *Entry) set(key, value string) {
	switch key {
	case "HEAD":
		e.Head = value
	case "branch":
		e.Branch = strings.TrimPrefix(value, "refs/heads/")
	case "bare":
		e.Bare = true
	case "locked":
		e.Locked, e.LockReason = true, value
		e.Spare = value == spareReason
	case "prunable":
		e.Prunable = true
	}
}

// Prune forgets the worktrees of main whose directories are gone.
func (g *Git) Prune(ctx context.Context, main string) error {
	_, err := g.run(ctx, main, "worktree", "prune")
	return err
}
