package workspace

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Tree is a git tree-ish object id: a snapshot of a worktree's files (or a
// commit, whose tree is meant).
type Tree string

// Stat is what changed between two trees, for a turn's footer.
type Stat struct {
	Files      int        // files changed
	Insertions int        // lines added
	Deletions  int        // lines removed
	Changes    []FileStat // one per file, in git's order
}

// FileStat is one changed file of a Stat.
type FileStat struct {
	Path       string
	OldPath    string // the path it was renamed from, or ""
	Insertions int
	Deletions  int
	Binary     bool // no line counts
}

// String is the footer line: "3 files changed, +40 −2" (with a real minus
// sign), "1 file changed, +1 −0", or "no changes".
func (s Stat) String() string {
	if s.Files == 0 {
		return "no changes"
	}
	return fmt.Sprintf("%s changed, +%d \u2212%d", plural(s.Files, "file", "files"), s.Insertions, s.Deletions)
}

// Snapshot is the tree of wt's whole working state: tracked files as they are
// on disk and untracked files that are not ignored. It runs on wt's side
// and never touches wt's index or HEAD: git adds everything to a second
// index of the chat's own (snapshotIndex in its git directory, brought to
// HEAD first with read-tree -i -m, which keeps the stat data of unchanged
// files, so they are not hashed again) and writes that tree. The blobs it
// writes are unreachable until committed and go with git's gc. One
// Snapshot of a chat runs at a time.
func (g *Git) Snapshot(ctx context.Context, wt Worktree) (Tree, error) {
	chat, err := g.chat(wt)
	if err != nil {
		return "", err
	}
	mu, _ := g.snapLocks.LoadOrStore(filepath.Clean(wt.Dir), new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(wt.Dir, ".git", snapshotIndex)}
	// -i: the second index is not the working tree's, its entries need not
	// match the files (an untracked file changed since the last Snapshot).
	for _, args := range [][]string{{"read-tree", "-i", "-m", "HEAD"}, {"add", "--all", "--", "."}} {
		if _, err := chat.exec(ctx, call{args: args, env: env}); err != nil {
			return "", err
		}
	}
	out, err := chat.exec(ctx, call{args: []string{"write-tree"}, env: env})
	if err != nil {
		return "", err
	}
	tree := strings.TrimSpace(string(out))
	if !isObjectID(tree) {
		return "", fmt.Errorf("git write-tree in %s: not a tree id: %q", wt.Dir, truncate(tree, 80))
	}
	return Tree(tree), nil
}

// snapshotIndex is the chat's second index, of Snapshot.
const snapshotIndex = "threadline-snapshot.index"

// Stat is what changed from one tree to another (renames followed), run on
// wt's side, in its clone (Snapshot's trees are there).
func (g *Git) Stat(ctx context.Context, wt Worktree, from, to Tree) (Stat, error) {
	chat, err := g.chat(wt)
	if err != nil {
		return Stat{}, err
	}
	return stat(ctx, chat, string(from), string(to))
}

// stat is the Stat of two tree-ishes in r.
func stat(ctx context.Context, r repo, from, to string) (Stat, error) {
	if from == to {
		return Stat{}, nil
	}
	out, err := r.exec(ctx, call{args: []string{
		"diff-tree", "-r", "-z", "--numstat", "-M", "--no-ext-diff", "--no-textconv", from, to,
	}})
	if err != nil {
		return Stat{}, err
	}
	return parseNumstat(string(out)), nil
}

// parseNumstat reads `git diff-tree -z --numstat`: "ADD\tDEL\tPATH\0", or for
// a rename "ADD\tDEL\t\0OLD\0NEW\0"; binary files count "-".
func parseNumstat(out string) Stat {
	var s Stat
	fields := splitNUL(out)
	for i := 0; i < len(fields); i++ {
		add, rest, _ := strings.Cut(fields[i], "\t")
		del, path, _ := strings.Cut(rest, "\t")
		f := FileStat{Path: path}
		if path == "" && i+2 < len(fields) {
			f.OldPath, f.Path = fields[i+1], fields[i+2]
			i += 2
		}
		f.Binary = add == "-"
		f.Insertions, _ = strconv.Atoi(add)
		f.Deletions, _ = strconv.Atoi(del)
		s.Changes = append(s.Changes, f)
		s.Insertions += f.Insertions
		s.Deletions += f.Deletions
	}
	s.Files = len(s.Changes)
	return s
}

// BranchDiff is wt's whole change against its base, for a turn's footer:
// from the merge base of its HEAD and the main clone's refs/heads/<wt.Base>
// to its working state (Snapshot, so uncommitted and untracked work
// count), as a binary-safe patch and its Stat. It runs on wt's side (the
// base's commits are in the main clone's objects, which the clone
// borrows); what is shipped is ShipDiff's, on the bot's side.
func (g *Git) BranchDiff(ctx context.Context, wt Worktree) ([]byte, Stat, error) {
	chat, err := g.chat(wt)
	if err != nil {
		return nil, Stat{}, err
	}
	baseID, err := g.bot(wt.Main).refID(ctx, "refs/heads/"+wt.Base)
	if err != nil {
		return nil, Stat{}, err
	}
	if baseID == "" {
		return nil, Stat{}, fmt.Errorf("branch %q: %w", wt.Base, ErrBaseMissing)
	}
	base, err := chat.run(ctx, "merge-base", "HEAD", baseID)
	if err != nil {
		return nil, Stat{}, err
	}
	state, err := g.Snapshot(ctx, wt)
	if err != nil {
		return nil, Stat{}, err
	}
	return diff(ctx, chat, base, string(state))
}

// ShipDiff is what shipping head of wt's branch would bring, computed on
// the bot's side from imported commits only (Import): from the merge base
// of head and the main clone's refs/heads/<wt.Base> to head, as a
// binary-safe patch and its Stat. head "" is the main clone's
// refs/heads/<wt.Branch>. This is the diff to scan before Push or Merge:
// the commit pushed is the one scanned (PushOptions.Head).
func (g *Git) ShipDiff(ctx context.Context, wt Worktree, head string) ([]byte, Stat, error) {
	if err := wt.check(); err != nil {
		return nil, Stat{}, err
	}
	main := g.bot(wt.Main)
	head, err := importedHead(ctx, main, wt.Branch, head)
	if err != nil {
		return nil, Stat{}, err
	}
	base, err := main.run(ctx, "merge-base", head, "refs/heads/"+wt.Base)
	if err != nil {
		return nil, Stat{}, err
	}
	return diff(ctx, main, base, head)
}

// ShipHistory is every commit wt's branch (imported, at head) adds to its
// base and to what the main clone's remote already has, each as its own
// patch, on the bot's side: what a push would publish, intermediate states
// included (a key added by one commit and removed by the next is still in
// the history). Merges are shown against their first parent.
func (g *Git) ShipHistory(ctx context.Context, wt Worktree, head string) ([]byte, error) {
	if err := wt.check(); err != nil {
		return nil, err
	}
	main := g.bot(wt.Main)
	head, err := importedHead(ctx, main, wt.Branch, head)
	if err != nil {
		return nil, err
	}
	return main.exec(ctx, call{args: []string{
		"log", "-p", "--binary", "--first-parent", "-m", "--no-ext-diff", "--no-textconv", "--no-color", "--format=",
		head, "--not", "refs/heads/" + wt.Base, "--remotes",
	}})
}

// importedHead is head checked to be a commit of main, or main's
// refs/heads/<branch> when head is "".
func importedHead(ctx context.Context, main repo, branch, head string) (string, error) {
	if head == "" {
		id, err := main.refID(ctx, "refs/heads/"+branch)
		if err == nil && id == "" {
			err = invalid("%s has not been imported into the main clone (Import)", branch)
		}
		return id, err
	}
	if !isObjectID(head) {
		return "", invalid("%q is not a commit id", head)
	}
	id, err := main.refID(ctx, head)
	if err == nil && id != head {
		err = invalid("%s is not a commit of the main clone (Import)", head)
	}
	return id, err
}

// diff is the patch and Stat from one tree-ish to another in r.
func diff(ctx context.Context, r repo, from, to string) ([]byte, Stat, error) {
	patch, err := r.exec(ctx, call{args: []string{
		"diff-tree", "-r", "-p", "--binary", "-M", "--no-ext-diff", "--no-textconv", from, to,
	}})
	if err != nil {
		return nil, Stat{}, err
	}
	st, err := stat(ctx, r, from, to)
	return patch, st, err
}
