package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// IncludeFile names the file of gitignore-style patterns (one a line) that
// choose which of the main clone's ignored files a new worktree gets (.env,
// local config): the same name Claude Code's worktrees read.
const IncludeFile = ".worktreeinclude"

// Include copies into wt.Dir the files of wt.Main that git ignores and
// IncludeFile's patterns match (the worktree's own IncludeFile, else the
// main clone's). Tracked and merely untracked files are never copied, nor is
// a file wt.Dir already has. Regular files keep their mode; symbolic links
// are copied as links. Create and Fork call it; without IncludeFile it does
// nothing.
func (g *Git) Include(ctx context.Context, wt Worktree) error {
	patterns := includePatterns(wt)
	if patterns == "" {
		return nil
	}
	files, err := g.includedFiles(ctx, wt.Main, patterns)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := copyIncluded(wt.Main, wt.Dir, f); err != nil {
			return fmt.Errorf("copying %s into the worktree: %w", f, err)
		}
	}
	return nil
}

// includePatterns is the path of the IncludeFile to use, or "".
func includePatterns(wt Worktree) string {
	for _, dir := range []string{wt.Dir, wt.Main} {
		p := filepath.Join(dir, IncludeFile)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// includedFiles lists main's untracked files that match patterns, then keeps
// those git ignores.
func (g *Git) includedFiles(ctx context.Context, main, patterns string) ([]string, error) {
	out, err := g.exec(ctx, call{dir: main, args: []string{
		"ls-files", "-z", "--others", "--ignored", "--exclude-from=" + patterns,
	}})
	if err != nil || len(out) == 0 {
		return nil, err
	}
	out, err = g.exec(ctx, call{dir: main, args: []string{"check-ignore", "-z", "--stdin"}, stdin: strings.NewReader(string(out))})
	if ge, ok := errors.AsType[*GitError](err); ok && ge.Code == 1 && ge.Err == nil {
		return nil, nil // none is ignored
	}
	if err != nil {
		return nil, err
	}
	return splitNUL(string(out)), nil
}

// copyIncluded copies main/rel to dir/rel unless dir/rel exists, creating
// the directories between.
func copyIncluded(main, dir, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("path %q leaves the worktree", rel)
	}
	src, dst := filepath.Join(main, rel), filepath.Join(dir, rel)
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		return os.Symlink(target, dst)
	case fi.Mode().IsRegular():
		return copyFile(src, dst, fi.Mode().Perm())
	}
	return nil
}

// copyFile copies src to a new file dst (O_EXCL: never through a link at dst).
func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// splitNUL splits git's -z output.
func splitNUL(s string) []string {
	s = strings.TrimSuffix(s, "\x00")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\x00")
}
