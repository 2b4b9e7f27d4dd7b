package workspace

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
// on disk and untracked files that are not ignored. It never touches wt's
// index or HEAD: git adds everything to a copy of the index (a temporary
// file in wt's git directory, so unchanged files are not hashed again) and
// writes that tree. The blobs it writes are unreachable until committed and
// go with git's gc.
func (g *Git) Snapshot(ctx context.Context, wt Worktree) (Tree, error) {
	index, err := tempIndex(wt.Dir)
	if err != nil {
		return "", err
	}
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if _, err := g.exec(ctx, call{dir: wt.Dir, args: []string{"add", "--all", "--", "."}, env: env}); err != nil {
		return "", err
	}
	out, err := g.exec(ctx, call{dir: wt.Dir, args: []string{"write-tree"}, env: env})
	if err != nil {
		return "", err
	}
	return Tree(strings.TrimSpace(string(out))), nil
}

// tempIndex copies the index of the worktree at dir to a new file beside it
// and returns its path.
func tempIndex(dir string) (string, error) {
	gitDir, err := gitDirOf(dir)
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(gitDir, "threadline-snapshot-*.index")
	if err != nil {
		return "", err
	}
	if err := copyIndex(filepath.Join(gitDir, "index"), tmp); err != nil {
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), nil
}

// copyIndex copies the index at src into dst (none: dst is removed, git
// starts a new index) and closes dst. dst is made readable to a git running
// as another user (the Cmd hook); it holds names and object ids, no contents.
func copyIndex(src string, dst *os.File) error {
	defer dst.Close()
	in, err := os.Open(src)
	if os.IsNotExist(err) {
		return os.Remove(dst.Name())
	}
	if err != nil {
		return err
	}
	defer in.Close()
	if _, err := io.Copy(dst, in); err != nil {
		return err
	}
	if err := dst.Chmod(0o644); err != nil {
		return err
	}
	return dst.Close()
}

// gitDirOf is the git directory of the working tree at dir: dir/.git, or
// where a linked worktree's .git file points.
func gitDirOf(dir string) (string, error) {
	dotGit := filepath.Join(dir, ".git")
	fi, err := os.Stat(dotGit)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNotRepo, dir)
	}
	if fi.IsDir() {
		return dotGit, nil
	}
	b, err := os.ReadFile(dotGit)
	if err != nil {
		return "", err
	}
	target, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok {
		return "", fmt.Errorf("%w: %s has a malformed .git file", ErrNotRepo, dir)
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(dir, target)
	}
	return target, nil
}

// Stat is what changed from one tree to another (renames followed), run in
// wt's repository.
func (g *Git) Stat(ctx context.Context, wt Worktree, from, to Tree) (Stat, error) {
	if from == to {
		return Stat{}, nil
	}
	out, err := g.exec(ctx, call{dir: wt.Dir, args: []string{
		"diff-tree", "-r", "-z", "--numstat", "-M", "--no-ext-diff", "--no-textconv", string(from), string(to),
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

// BranchDiff is wt's whole change against its base: from the merge base of
// its HEAD and refs/heads/<wt.Base> to its working state (Snapshot, so
// uncommitted and untracked work count), as a binary-safe patch and its Stat.
func (g *Git) BranchDiff(ctx context.Context, wt Worktree) ([]byte, Stat, error) {
	base, err := g.run(ctx, wt.Dir, "merge-base", "HEAD", "refs/heads/"+wt.Base)
	if err != nil {
		return nil, Stat{}, err
	}
	state, err := g.Snapshot(ctx, wt)
	if err != nil {
		return nil, Stat{}, err
	}
	patch, err := g.exec(ctx, call{dir: wt.Dir, args: []string{
		"diff-tree", "-r", "-p", "--binary", "-M", "--no-ext-diff", "--no-textconv", base, string(state),
	}})
	if err != nil {
		return nil, Stat{}, err
	}
	stat, err := g.Stat(ctx, wt, Tree(base), state)
	return patch, stat, err
}
