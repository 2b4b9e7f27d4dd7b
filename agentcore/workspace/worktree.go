package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Worktree is one chat's working copy: its own clone of the main clone, on
// its own branch. The caller keeps its four paths and names (they are all
// Create needs to find it again) and gives Agent with every call.
type Worktree struct {
	Main   string // the repository it is cloned from: a project's main clone or a loose repository
	Dir    string // its own directory, outside Main: the clone
	Branch string // its branch, without "refs/heads/"
	Base   string // the branch it started from and lands on, without "refs/heads/"
	// Agent sees every git command run in Dir before it starts: it runs
	// them as the chat's agent (its user, its sandbox, which may write Dir
	// and read Main). nil runs them as the bot (tests, bots without
	// isolation), unless Options.RequireAgent refuses that.
	Agent func(*exec.Cmd)
}

// Entry is one chat clone or spare of a main clone, as recorded by Create,
// Fork and Spare.
type Entry struct {
	Dir      string
	Branch   string // "" for a spare
	Base     string
	Head     string // the main clone's refs/heads/<Branch>: the last commit imported (Import), or ""
	Spare    bool   // a spare (Spare), ready for a Create to take when Ready
	Ready    bool   // made; false while it is being made
	Prunable bool   // its directory is gone; Prune forgets it
}

// Create makes wt: a clone of wt.Main at wt.Dir, made on the agent's side
// (wt.Agent), that borrows the main clone's objects (git clone --shared),
// with its branch wt.Branch checked out, started at the main clone's
// refs/heads/<wt.Branch> when it has one (a chat removed without
// discarding, or whose directory vanished) or else at refs/heads/<wt.Base>.
// It takes a spare beside wt.Dir when there is one (see Spare), then copies
// the ignored files .worktreeinclude names (Include).
//
// wt.Dir is made with Options.MakeDir when it does not exist; an empty one
// is used as it is. Create is idempotent: a clone recorded at wt.Dir for
// wt.Branch is returned as it is. It fails with ErrBaseMissing,
// ErrBranchInUse (the branch's clone is elsewhere) or ErrDirInUse. The
// returned Worktree has absolute, clean paths.
func (g *Git) Create(ctx context.Context, wt Worktree) (Worktree, error) {
	wt, err := g.prepare(ctx, wt)
	if err != nil {
		return wt, err
	}
	if _, err := g.chat(wt); err != nil {
		return wt, err
	}
	reg, err := g.registry(ctx, wt.Main)
	if err != nil {
		return wt, err
	}
	if found, err := g.existing(ctx, reg, wt); found || err != nil {
		return wt, err
	}
	main := g.bot(wt.Main)
	if err := g.baseExists(ctx, wt.Main, wt.Base); err != nil {
		return wt, err
	}
	start, err := main.refID(ctx, "refs/heads/"+wt.Branch)
	if err != nil {
		return wt, err
	}
	if start == "" {
		if start, err = main.refID(ctx, "refs/heads/"+wt.Base); err != nil {
			return wt, err
		}
	}
	if err := g.makeClone(ctx, reg, wt, start); err != nil {
		return wt, err
	}
	return wt, g.include(ctx, wt, start)
}

// Fork makes wt a new chat clone that starts where parent is: its branch
// starts at parent's HEAD commit and parent's uncommitted work (modified,
// deleted and untracked files that are not ignored) is put in as
// uncommitted work, so parent's files, index and HEAD are never touched:
// a Snapshot of parent (parent's side), the import of its HEAD and of that
// tree into the main clone (the bot's side), then wt made from the main
// clone at that HEAD and the tree applied (wt's side). The main clone's
// refs/heads/<wt.Branch> is set to parent's HEAD, which keeps the objects
// wt borrows. wt.Main "" is parent's, wt.Base "" is parent's base. Like
// Create it is idempotent and copies the .worktreeinclude files.
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
	if !samePath(filepath.Clean(parent.Main), wt.Main) {
		return wt, invalid("a fork is made from the same main clone as its parent")
	}
	reg, err := g.registry(ctx, wt.Main)
	if err != nil {
		return wt, err
	}
	if found, err := g.existing(ctx, reg, wt); found || err != nil {
		return wt, err
	}
	from, err := g.chat(parent)
	if err != nil {
		return wt, err
	}
	if _, err := g.chat(wt); err != nil {
		return wt, err
	}
	state, err := g.Snapshot(ctx, parent)
	if err != nil {
		return wt, err
	}
	head, err := from.objectID(ctx, "HEAD^{commit}")
	if err != nil {
		return wt, err
	}
	main := g.bot(wt.Main)
	known := []string{"refs/heads/" + wt.Base, "refs/heads/" + parent.Branch, "refs/heads/" + wt.Branch}
	if err := g.importObjects(ctx, from, main, []string{head, string(state)}, known); err != nil {
		return wt, err
	}
	if _, err := main.run(ctx, "update-ref", "-m", "threadline: fork of "+parent.Branch, "refs/heads/"+wt.Branch, head, ""); err != nil && !isRefExists(err) {
		return wt, err
	}
	start, err := main.refID(ctx, "refs/heads/"+wt.Branch)
	if err != nil {
		return wt, err
	}
	if err := g.makeClone(ctx, reg, wt, start); err != nil {
		return wt, err
	}
	if start == head {
		if err := g.applyState(ctx, wt, state); err != nil {
			return wt, err
		}
	}
	return wt, g.include(ctx, wt, start)
}

// isRefExists tells update-ref's refusal to create a ref that exists.
func isRefExists(err error) bool {
	ge, ok := errors.AsType[*GitError](err)
	return ok && strings.Contains(ge.Stderr, "reference already exists")
}

// prepare checks wt's fields and makes its paths absolute and clean.
func (g *Git) prepare(ctx context.Context, wt Worktree) (Worktree, error) {
	if err := wt.check(); err != nil {
		return wt, err
	}
	if wt.Base == "" {
		return wt, invalid("a chat needs a Base")
	}
	wt.Main, wt.Dir = filepath.Clean(wt.Main), filepath.Clean(wt.Dir)
	if samePath(wt.Main, wt.Dir) || strings.HasPrefix(wt.Dir, wt.Main+string(filepath.Separator)) {
		return wt, invalid("a chat's clone %s must be outside the main clone", wt.Dir)
	}
	if ok, err := g.bot(wt.Main).test(ctx, "check-ref-format", "refs/heads/"+wt.Branch); err != nil || !ok {
		return wt, invalid("%q is not a valid branch name", wt.Branch)
	}
	if ok, err := g.bot(wt.Main).test(ctx, "check-ref-format", "refs/heads/"+wt.Base); err != nil || !ok {
		return wt, invalid("%q is not a valid branch name", wt.Base)
	}
	return wt, nil
}

// check is the check every call of a chat makes: absolute paths and a
// branch.
func (wt Worktree) check() error {
	if !filepath.IsAbs(wt.Main) || !filepath.IsAbs(wt.Dir) || wt.Branch == "" {
		return invalid("a chat needs absolute Main and Dir and a Branch")
	}
	return nil
}

// existing looks wt up in the registry: recorded at wt.Dir for wt.Branch
// and made, it is reused; recorded at wt.Dir for something else it is
// ErrDirInUse; wt.Branch recorded at another directory that exists is
// ErrBranchInUse. A record whose directory is gone is forgotten, and one
// left half made is removed with its directory: wt is made anew. An
// unrecorded wt.Dir that is not empty is ErrDirInUse.
func (g *Git) existing(ctx context.Context, reg registry, wt Worktree) (bool, error) {
	recs, err := reg.list()
	if err != nil {
		return false, err
	}
	for _, rec := range recs {
		if rec.Spare || rec.Branch != wt.Branch || samePath(rec.Dir, wt.Dir) {
			continue
		}
		if dirExists(rec.Dir) {
			return false, fmt.Errorf("%w: %s is checked out in %s", ErrBranchInUse, wt.Branch, rec.Dir)
		}
		if err := reg.del(rec.Dir); err != nil {
			return false, err
		}
	}
	rec, ok, err := reg.get(wt.Dir)
	switch {
	case err != nil:
		return false, err
	case ok && (rec.Spare || rec.Branch != wt.Branch):
		return false, fmt.Errorf("%w: %s is the clone of %s", ErrDirInUse, wt.Dir, cmpOr(rec.Branch, "a spare"))
	case ok && rec.Ready && dirExists(filepath.Join(wt.Dir, ".git")):
		return true, nil
	case ok && rec.Ready && dirExists(wt.Dir):
		return false, fmt.Errorf("%w: %s is no longer a clone (its .git is gone)", ErrDirInUse, wt.Dir)
	case ok && dirExists(wt.Dir): // left half made
		if err := g.removeDir(ctx, wt.Dir); err != nil {
			return false, err
		}
		fallthrough
	case ok:
		return false, reg.del(wt.Dir)
	}
	return false, dirFree(wt.Dir)
}

// cmpOr is cmp.Or for strings (kept short where it is used in text).
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// makeClone makes wt's clone with wt.Branch checked out at start: from a
// spare beside it when one is ready, else cloned anew. It is recorded
// before anything is made (not ready) and marked ready at the end; on
// failure what was made is removed.
func (g *Git) makeClone(ctx context.Context, reg registry, wt Worktree, start string) error {
	chat, err := g.chat(wt)
	if err != nil {
		return err
	}
	baseID, err := g.bot(wt.Main).refID(ctx, "refs/heads/"+wt.Base)
	if err != nil {
		return err
	}
	rec := record{Dir: wt.Dir, Branch: wt.Branch, Base: wt.Base}
	if err := reg.put(rec); err != nil {
		return err
	}
	taken, err := g.takeSpare(ctx, reg, wt, start, baseID)
	if err == nil && !taken {
		err = g.cloneInto(ctx, chat, wt.Main, wt.Base)
		if err == nil {
			err = g.checkoutBranch(ctx, chat, wt.Branch, start, wt.Base, baseID)
		}
	}
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		if dirExists(wt.Dir) {
			err = errors.Join(err, g.removeDir(cleanup, wt.Dir))
		}
		return errors.Join(err, reg.del(wt.Dir))
	}
	rec.Ready = true
	return reg.put(rec)
}

// cloneInto makes r.dir (with Options.MakeDir when missing) a clone of main
// that borrows main's objects (objects/info/alternates), has no checkout
// yet and tracks only base (refs/remotes/origin/<base>). It runs on r's
// side. The upload-pack of a local clone reads main as the agent's user,
// which does not own it: it is told to trust it (safe.directory, the one
// setting a local transport does not pass on otherwise), now and in the
// clone's configuration, so that the agent's own git fetch works too.
func (g *Git) cloneInto(ctx context.Context, r repo, main, base string) error {
	if !dirExists(r.dir) {
		if err := g.makeDir(ctx, r.dir); err != nil {
			return err
		}
	}
	uploadPack := shellQuote(g.bin) + " -c 'safe.directory=*' upload-pack"
	_, err := r.exec(ctx, call{
		args: []string{"clone", "--quiet", "--shared", "--no-checkout", "--single-branch", "--no-tags",
			"--origin", "origin", "--branch", base, "--upload-pack", uploadPack,
			"--config", "remote.origin.uploadpack=" + uploadPack, "--", main, r.dir},
		timeout: g.cloneTimeout,
	})
	return err
}

// checkoutBranch checks branch out at start in the clone r (all files
// written, or only those that differ in a spare), and leaves no local
// branch of the base behind (a stale one would mislead the agent:
// origin/<base> is the base). baseID is the base's commit now: the clone's
// origin/<base> is set to it.
func (g *Git) checkoutBranch(ctx context.Context, r repo, branch, start, base, baseID string) error {
	if _, err := r.run(ctx, "checkout", "--quiet", "--no-track", "-b", branch, start); err != nil {
		return err
	}
	if branch != base {
		if _, err := r.run(ctx, "update-ref", "-d", "refs/heads/"+base); err != nil {
			return err
		}
	}
	_, err := r.run(ctx, "update-ref", "refs/remotes/origin/"+base, baseID)
	return err
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// dirExists tells whether p exists (following links).
func dirExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// dirFree fails with ErrDirInUse when dir exists and is not empty.
func dirFree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err == nil && len(entries) > 0 {
		return fmt.Errorf("%w: %s exists and is not empty", ErrDirInUse, dir)
	}
	return nil
}

// applyState makes wt's files those of tree, as uncommitted work over its
// HEAD: read-tree switches index and files to tree, reset puts the index
// back on HEAD (so the differences show as changes, new files as
// untracked). It runs on wt's side; tree's objects are in the main clone.
func (g *Git) applyState(ctx context.Context, wt Worktree, tree Tree) error {
	chat, err := g.chat(wt)
	if err != nil {
		return err
	}
	head, err := chat.run(ctx, "rev-parse", "HEAD^{tree}")
	if err != nil || Tree(head) == tree {
		return err
	}
	if _, err := chat.run(ctx, "read-tree", "-m", "-u", "HEAD", string(tree)); err != nil {
		return err
	}
	_, err = chat.run(ctx, "reset", "--quiet")
	return err
}

// RemoveOptions says what Remove may drop.
type RemoveOptions struct {
	// Discard removes the clone whatever it holds, and the main clone's
	// branch of the chat.
	Discard bool
	// Pushed is the last commit the caller pushed of this chat (to a URL
	// that leaves no remote-tracking branch), "" for none: work it holds
	// is not lost.
	Pushed string
}

// Remove removes wt's clone (Options.RemoveDir) and its record, and the
// main clone's refs/heads/<wt.Branch> when discarding or when that branch
// is merged into wt.Base. Without Discard, uncommitted work or commits that
// no remote-tracking branch of the main clone, not opt.Pushed and not the
// base hold make it fail with an *UnpushedError (ErrUnpushed) that says
// what would be lost, and nothing is removed. A clone whose directory is
// already gone is forgotten.
func (g *Git) Remove(ctx context.Context, wt Worktree, opt RemoveOptions) error {
	if err := wt.check(); err != nil {
		return err
	}
	wt.Main, wt.Dir = filepath.Clean(wt.Main), filepath.Clean(wt.Dir)
	if !opt.Discard {
		p, err := g.Unpushed(ctx, wt, opt.Pushed)
		if err != nil {
			return err
		}
		if !p.Clean() {
			return &UnpushedError{Branch: wt.Branch, Commits: p.Commits, Files: p.Files}
		}
	}
	reg, err := g.registry(ctx, wt.Main)
	if err != nil {
		return err
	}
	if dirExists(wt.Dir) {
		if err := g.removeDir(ctx, wt.Dir); err != nil {
			return fmt.Errorf("removing %s: %w", wt.Dir, err)
		}
	}
	if err := reg.del(wt.Dir); err != nil {
		return err
	}
	g.snapLocks.Delete(wt.Dir)
	main := g.bot(wt.Main)
	head, err := main.refID(ctx, "refs/heads/"+wt.Branch)
	if err != nil || head == "" {
		return err
	}
	drop := opt.Discard
	if !drop && wt.Base != "" {
		merged, err := main.test(ctx, "merge-base", "--is-ancestor", head, "refs/heads/"+wt.Base)
		if err != nil && !isMissingRef(err) {
			return err
		}
		drop = merged
	}
	if !drop {
		return nil
	}
	_, err = main.run(ctx, "update-ref", "-m", "threadline: remove", "-d", "refs/heads/"+wt.Branch, head)
	return err
}

// isMissingRef tells a git error about a ref that does not exist.
func isMissingRef(err error) bool {
	ge, ok := errors.AsType[*GitError](err)
	return ok && (strings.Contains(ge.Stderr, "Not a valid") || strings.Contains(ge.Stderr, "unknown revision"))
}

// List is the chat clones and spares recorded for the main clone main, by
// directory, for gc: the caller decides from its database which are idle.
func (g *Git) List(ctx context.Context, main string) ([]Entry, error) {
	reg, err := g.registry(ctx, main)
	if err != nil {
		return nil, err
	}
	recs, err := reg.list()
	if err != nil {
		return nil, err
	}
	m := g.bot(main)
	list := make([]Entry, 0, len(recs))
	for _, rec := range recs {
		e := Entry{Dir: rec.Dir, Branch: rec.Branch, Base: rec.Base, Spare: rec.Spare, Ready: rec.Ready, Prunable: !dirExists(rec.Dir)}
		if rec.Branch != "" {
			if e.Head, err = m.refID(ctx, "refs/heads/"+rec.Branch); err != nil {
				return nil, err
			}
		}
		list = append(list, e)
	}
	return list, nil
}

// Prune forgets the chat clones and spares of main whose directories are
// gone. Their branches in main stay (Remove drops them).
func (g *Git) Prune(ctx context.Context, main string) error {
	reg, err := g.registry(ctx, main)
	if err != nil {
		return err
	}
	recs, err := reg.list()
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if !dirExists(rec.Dir) {
			if err := reg.del(rec.Dir); err != nil {
				return err
			}
		}
	}
	return nil
}
