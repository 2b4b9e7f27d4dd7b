package workspace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// mergeAttempts is how often Merge starts over when the base moved under it.
const mergeAttempts = 3

// errMoved is a base that moved during one attempt of a merge, before
// anything landed: the next attempt starts over from the new base.
var errMoved = errors.New("the base moved")

// MergeOptions says where Merge lands a branch.
type MergeOptions struct {
	Base string // the branch to land on; "" is the worktree's Base
	// Remote is the remote the base is fetched from and pushed to, when the
	// main repository has it; "" is "origin".
	Remote     string
	Credential *Credential // for Remote, as Push
	LocalOnly  bool        // land on the local base only: no fetch, no push
}

// Landed is what a Merge did.
type Landed struct {
	Base    string // the branch landed on
	From    string // its commit before
	To      string // its commit after; From when there was nothing to land
	Commits int    // the commits landed
}

// Merge lands wt's committed branch on the base without touching the main
// clone's files or any other chat's clone. On the bot's side it fetches the
// base from the main clone's remote (fast-forwarding the main clone's base
// to it); on wt's side (wt.Agent) it points the clone's origin/<base> at
// that commit (the clone borrows the main clone's objects, so nothing is
// copied) and rebases the branch onto it; back on the bot's side it
// imports the result (Import), pushes it to the remote's base (a plain
// fast-forward push, from the main clone, with the credential), then moves
// the main clone's refs/heads/<base> with a compare-and-swap update-ref.
// The base must be checked out nowhere (ErrBaseCheckedOut) and wt must
// have no uncommitted changes (ErrUncommitted).
//
// A conflict aborts the rebase, leaves wt as it was and returns a
// *ConflictError with the files; nothing lands. When the base moves during
// the merge it starts over (three times at most), then fails with
// ErrNotFastForward. A failed merge puts wt's branch back where it was.
func (g *Git) Merge(ctx context.Context, wt Worktree, opt MergeOptions) (Landed, error) {
	base := cmp.Or(opt.Base, wt.Base)
	if err := wt.check(); err != nil {
		return Landed{Base: base}, err
	}
	chat, err := g.chat(wt)
	if err != nil {
		return Landed{Base: base}, err
	}
	if err := g.mergeable(ctx, chat, wt, base); err != nil {
		return Landed{Base: base}, err
	}
	orig, err := chat.objectID(ctx, "HEAD")
	if err != nil {
		return Landed{Base: base}, err
	}
	main := g.bot(wt.Main)
	remote := landingRemote(ctx, main, opt)
	for range mergeAttempts {
		l, err := g.land(ctx, chat, main, wt, base, remote, opt.Credential)
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, errMoved) {
			return l, restore(ctx, chat, wt, orig, err)
		}
		g.log.DebugContext(ctx, "workspace: the base moved during a merge", logkey.Dir, wt.Dir, logkey.Err, err)
	}
	err = fmt.Errorf("%w: %s moved on %d times during the merge", ErrNotFastForward, base, mergeAttempts)
	return Landed{Base: base}, restore(ctx, chat, wt, orig, err)
}

// restore puts wt's branch back on orig after a merge that failed (an
// earlier attempt may have rebased it) and returns err. wt had nothing
// uncommitted, so nothing is lost.
func restore(ctx context.Context, chat repo, wt Worktree, orig string, err error) error {
	ctx = context.WithoutCancel(ctx)
	head, headErr := chat.run(ctx, "rev-parse", "HEAD")
	if headErr == nil && head == orig {
		return err
	}
	if _, resetErr := chat.run(ctx, "reset", "--quiet", "--hard", orig); resetErr != nil {
		return errors.Join(err, fmt.Errorf("restoring %s: %w", wt.Branch, resetErr))
	}
	return err
}

// mergeable checks that wt is on its branch with nothing uncommitted and
// that base exists and is checked out nowhere.
func (g *Git) mergeable(ctx context.Context, chat repo, wt Worktree, base string) error {
	head, err := chat.run(ctx, "symbolic-ref", "--quiet", "HEAD")
	if err != nil || head != "refs/heads/"+wt.Branch {
		return invalid("the clone %s is not on its branch %s", wt.Dir, wt.Branch)
	}
	files, err := changedFiles(ctx, chat)
	if err != nil {
		return err
	}
	if len(files) > 0 {
		return fmt.Errorf("%w: %s (commit them first)", ErrUncommitted, listFiles(files))
	}
	if err := g.baseExists(ctx, wt.Main, base); err != nil {
		return err
	}
	return g.baseFree(ctx, wt.Main, base)
}

// landingRemote is the remote Merge syncs the base with, or "" for none:
// LocalOnly, or a main repository without that remote.
func landingRemote(ctx context.Context, main repo, opt MergeOptions) string {
	remote := cmp.Or(opt.Remote, "origin")
	if opt.LocalOnly {
		return ""
	}
	if _, err := main.run(ctx, "config", "--get", "remote."+remote+".url"); err != nil {
		return ""
	}
	return remote
}

// land is one attempt of Merge.
func (g *Git) land(ctx context.Context, chat, main repo, wt Worktree, base, remote string, cred *Credential) (Landed, error) {
	onto, err := g.syncBase(ctx, main, base, remote, cred)
	if err != nil {
		return Landed{Base: base}, err
	}
	l := Landed{Base: base, From: onto, To: onto}
	if _, err := chat.run(ctx, "update-ref", "refs/remotes/origin/"+base, onto); err != nil {
		return l, err
	}
	if err := rebase(ctx, chat, wt, base, onto, g.name, g.email); err != nil {
		return l, err
	}
	head, err := g.Import(ctx, wt)
	if err != nil || head == onto {
		return l, err
	}
	n, err := main.run(ctx, "rev-list", "--count", onto+".."+head)
	if err != nil {
		return l, err
	}
	if err := g.publish(ctx, main, wt, base, remote, cred, onto, head); err != nil {
		return l, err
	}
	l.To = head
	l.Commits, _ = strconv.Atoi(n)
	return l, nil
}

// publish lands head: pushed to the remote's base first (when there is a
// remote), then the local base moved from onto to head. A base that moved
// meanwhile is errMoved, unless the remote already took head.
func (g *Git) publish(ctx context.Context, main repo, wt Worktree, base, remote string, cred *Credential, onto, head string) error {
	if remote != "" {
		if err := g.push(ctx, main, remote, cred, head+":refs/heads/"+base); err != nil {
			if errors.Is(err, ErrNotFastForward) {
				err = fmt.Errorf("%w: %w", errMoved, err)
			}
			return err
		}
	}
	err := moveRef(ctx, main, base, head, onto, "threadline: merge "+wt.Branch)
	if err != nil && remote == "" {
		return fmt.Errorf("%w: %w", errMoved, err)
	}
	if err != nil { // landed on the remote; the next sync fast-forwards the local base
		g.log.WarnContext(ctx, "workspace: local base moved during a merge", logkey.Dir, wt.Main,
			logkey.To, base, logkey.Err, err)
	}
	return nil
}

// moveRef moves refs/heads/<branch> from old to new, failing when it is not
// at old any more.
func moveRef(ctx context.Context, main repo, branch, newID, oldID, reason string) error {
	_, err := main.run(ctx, "update-ref", "-m", reason, "refs/heads/"+branch, newID, oldID)
	return err
}

// syncBase fetches base from remote (none: skipped) and fast-forwards the
// local base to it, and returns the commit to land on: the local base. A
// local base ahead of the remote's stays (its push goes with the merge's);
// diverged ones are ErrNotFastForward.
func (g *Git) syncBase(ctx context.Context, main repo, base, remote string, cred *Credential) (string, error) {
	local, err := main.run(ctx, "rev-parse", "--verify", "refs/heads/"+base+"^{commit}")
	if err != nil || remote == "" {
		return local, err
	}
	theirs, err := g.fetchBase(ctx, main, base, remote, cred)
	if err != nil || theirs == "" || theirs == local {
		return local, err
	}
	if behind, err := main.test(ctx, "merge-base", "--is-ancestor", local, theirs); err != nil || behind {
		if err == nil {
			err = moveRef(ctx, main, base, theirs, local, "threadline: fast-forward to "+remote)
		}
		if err != nil {
			return "", fmt.Errorf("%w: %w", errMoved, err)
		}
		return theirs, nil
	}
	if ahead, err := main.test(ctx, "merge-base", "--is-ancestor", theirs, local); err != nil || ahead {
		return local, err
	}
	return "", fmt.Errorf("%w: %s and %s/%s have diverged", ErrNotFastForward, base, remote, base)
}

// fetchBase fetches remote's base into refs/remotes/<remote>/<base> and
// returns its commit, or "" when the remote has no such branch (the merge's
// push creates it).
func (g *Git) fetchBase(ctx context.Context, main repo, base, remote string, cred *Credential) (string, error) {
	config, secrets := cred.config(remoteURL(ctx, main, remote))
	tracking := "refs/remotes/" + remote + "/" + base
	_, err := main.exec(ctx, call{
		args:    []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", remote, "+refs/heads/" + base + ":" + tracking},
		config:  config,
		secrets: secrets,
	})
	if ge, ok := errors.AsType[*GitError](err); ok && strings.Contains(ge.Stderr, "couldn't find remote ref") {
		return "", nil
	} else if ok && isRefRace(ge.Stderr) { // another fetch or push moved the tracking ref
		return "", fmt.Errorf("%w: %w", errMoved, err)
	}
	if err != nil {
		return "", err
	}
	return main.run(ctx, "rev-parse", "--verify", tracking+"^{commit}")
}

// rebase rebases wt's branch onto onto in its clone, on its side, with
// the bot as committer. On failure the rebase is aborted (even when ctx
// ended) so wt is as it was; conflicting files make it a *ConflictError.
func rebase(ctx context.Context, chat repo, wt Worktree, base, onto, name, email string) error {
	_, err := chat.exec(ctx, call{
		args: []string{"rebase", "--quiet", "--no-autostash", onto},
		env:  []string{"GIT_COMMITTER_NAME=" + name, "GIT_COMMITTER_EMAIL=" + email},
	})
	if err == nil {
		return nil
	}
	cleanup := context.WithoutCancel(ctx)
	files, _ := chat.exec(cleanup, call{args: []string{"diff", "--name-only", "-z", "--diff-filter=U"}})
	if _, abortErr := chat.run(cleanup, "rebase", "--abort"); abortErr != nil && !isNoRebase(abortErr) {
		return errors.Join(err, fmt.Errorf("aborting the rebase: %w", abortErr))
	}
	if conflicts := splitNUL(string(files)); len(conflicts) > 0 && !errors.Is(err, ErrTimeout) && ctx.Err() == nil {
		return &ConflictError{Branch: wt.Branch, Base: base, Files: conflicts}
	}
	return err
}

// isNoRebase tells `git rebase --abort`'s answer when no rebase was going on.
func isNoRebase(err error) bool {
	ge, ok := errors.AsType[*GitError](err)
	return ok && strings.Contains(ge.Stderr, "No rebase in progress")
}
