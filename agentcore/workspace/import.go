package workspace

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Import brings wt's branch into the main clone: the commits and every
// object they need that the main clone lacks are copied into the main
// clone's own object store, and its refs/heads/<wt.Branch> is set to the
// branch's head, which it returns. From there the bot's side ships it
// (ShipDiff, Push, Merge) without ever reading wt's clone.
//
// The agent's side (wt.Agent) says which commit the branch is on (checked
// to be a full object id) and writes a pack of what the main clone lacks
// (git pack-objects, reading its own store); the bot's side reads that
// pack from a pipe into git index-pack --strict in the main clone, which
// computes every object's id from its content, refuses malformed objects,
// resolves deltas only against what the main clone has, and stops at
// Options.MaxImportSize. A commit or object the chat does not have is an
// error, not a hang, and the whole transfer runs under one time limit.
// The bot then checks, without the chat, that the main clone has the
// commit and everything it reaches (git rev-list --objects), and only then
// moves the ref. Nothing of the chat's configuration is read by the bot,
// and nothing of its clone is run as the bot.
func (g *Git) Import(ctx context.Context, wt Worktree) (string, error) {
	if err := wt.check(); err != nil {
		return "", err
	}
	chat, err := g.chat(wt)
	if err != nil {
		return "", err
	}
	head, err := chat.objectID(ctx, "refs/heads/"+wt.Branch+"^{commit}")
	if err != nil {
		return "", err
	}
	main := g.bot(wt.Main)
	if err := g.importObjects(ctx, chat, main, []string{head}, []string{"refs/heads/" + wt.Base, "refs/heads/" + wt.Branch}); err != nil {
		return "", err
	}
	if _, err := main.run(ctx, "update-ref", "-m", "threadline: import", "refs/heads/"+wt.Branch, head); err != nil {
		return "", err
	}
	return head, nil
}

// objectID is the object rev names in r, checked to be a full object id:
// what the agent's side answers is never used as the bot's argument
// otherwise.
func (r repo) objectID(ctx context.Context, rev string) (string, error) {
	id, err := r.run(ctx, "rev-parse", "--verify", "--quiet", rev)
	if err != nil {
		if ge, ok := errors.AsType[*GitError](err); ok && ge.Err == nil && ge.Code == 1 {
			return "", fmt.Errorf("%w: %s names no object in %s", ErrImport, rev, r.dir)
		}
		return "", err
	}
	if !isObjectID(id) {
		return "", fmt.Errorf("%w: %s in %s is not an object id: %q", ErrImport, rev, r.dir, truncate(id, 80))
	}
	return id, nil
}

// truncate cuts s to n bytes.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// importObjects copies into main's own store the objects that tips (full
// ids of commits or trees in chat's clone) reach and main lacks, then
// checks that main has all of them. known are refs of main the chat shares
// (its base, its branch as last imported): what they reach is left out of
// the pack and its deltas may be against it (a thin pack). Nothing is
// copied when main already has everything.
func (g *Git) importObjects(ctx context.Context, chat, main repo, tips, known []string) error {
	for _, t := range tips {
		if !isObjectID(t) {
			return fmt.Errorf("%w: %q is not an object id", ErrImport, truncate(t, 80))
		}
	}
	if g.connected(ctx, main, tips) == nil {
		return nil
	}
	var revs strings.Builder
	for _, t := range tips {
		revs.WriteString(t + "\n")
	}
	for _, ref := range known {
		id, err := main.refID(ctx, ref)
		if err != nil {
			return err
		}
		if id != "" {
			revs.WriteString("^" + id + "\n")
		}
	}
	_, err := g.pipe(ctx,
		chat, call{args: []string{"pack-objects", "--stdout", "--revs", "--thin", "--local", "--delta-base-offset", "-q"}, stdin: strings.NewReader(revs.String())},
		main, call{args: []string{"index-pack", "--stdin", "--fix-thin", "--strict", "--max-input-size=" + strconv.FormatInt(g.maxImportSize, 10)}},
	)
	if err != nil {
		if ge, ok := errors.AsType[*GitError](err); ok && ge.Err == nil {
			ge.Err = ErrImport
		}
		return err
	}
	if err := g.connected(ctx, main, tips); err != nil {
		return fmt.Errorf("%w: the main clone still lacks objects after the import: %w", ErrImport, err)
	}
	return nil
}

// connected checks that main has tips and every object they reach (what
// its refs reach is complete already): nil when it has.
func (g *Git) connected(ctx context.Context, main repo, tips []string) error {
	args := append([]string{"rev-list", "--objects", "--quiet"}, tips...)
	_, err := main.run(ctx, append(args, "--not", "--all")...)
	return err
}
