package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestWorktreesIsolated: two chats of one project change the same file; each
// worktree holds only its own change and the main clone is untouched.
func TestWorktreesIsolated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a, b := f.create("a"), f.create("b")
	writeFile(t, a.Dir, "src/app.go", "package app // a\n")
	writeFile(t, b.Dir, "src/app.go", "package app // b\n")
	writeFile(t, b.Dir, "new.txt", "b only\n")
	if _, err := f.g.Commit(t.Context(), a, CommitOptions{Message: "a"}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, a.Dir, "src/app.go"); got != "package app // a\n" {
		t.Errorf("a's file: %q", got)
	}
	if got := readFile(t, b.Dir, "src/app.go"); got != "package app // b\n" {
		t.Errorf("b's file: %q", got)
	}
	if readFile(t, a.Dir, "new.txt") != "" {
		t.Error("b's new file shows in a")
	}
	if got := gitT(t, b.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != "threadline/b" {
		t.Errorf("b is on %q", got)
	}
	f.assertMainUntouched()
}

func TestCreateReuse(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	a := f.create("a")
	writeFile(t, a.Dir, "wip.txt", "work in progress\n")
	again, err := f.g.Create(ctx, f.wt("a"))
	if err != nil || again != a {
		t.Fatalf("Create again = %+v, %v; want %+v", again, err, a)
	}
	if readFile(t, a.Dir, "wip.txt") == "" {
		t.Error("reuse lost the worktree's work")
	}

	// The directory vanished (a wiped disk): Create makes it again on the
	// same branch, with the branch's commits.
	id, err := f.g.Commit(ctx, a, CommitOptions{Message: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Create(ctx, f.wt("a")); err != nil {
		t.Fatalf("Create after the directory vanished: %v", err)
	}
	if got := gitT(t, a.Dir, "rev-parse", "HEAD"); got != id {
		t.Errorf("recreated worktree at %s, want the branch's %s", got, id)
	}
}

func TestCreateErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.create("a")
	elsewhere := f.wt("a")
	elsewhere.Dir = filepath.Join(f.root, "trees", "a2")
	onA := f.wt("b")
	onA.Dir = f.wt("a").Dir
	full := f.wt("c")
	writeFile(t, full.Dir, "x", "x")
	noBase := f.wt("d")
	noBase.Base = "nope"
	badBranch := f.wt("e")
	badBranch.Branch = "bad..name"
	relative := f.wt("f")
	relative.Dir = "trees/f"
	tests := []struct {
		name string
		wt   Worktree
		want error
	}{
		{"branch checked out elsewhere", elsewhere, ErrBranchInUse},
		{"dir is another chat's worktree", onA, ErrDirInUse},
		{"dir not empty", full, ErrDirInUse},
		{"base missing", noBase, ErrBaseMissing},
		{"bad branch", badBranch, ErrInvalid},
		{"relative dir", relative, ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := f.g.Create(t.Context(), tt.wt); !errors.Is(err, tt.want) {
			t.Errorf("%s: Create = %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestFork: the fork starts at the parent's HEAD with the parent's
// uncommitted work, and the parent's files, index and HEAD do not change.
func TestFork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	parent := f.create("parent")
	writeFile(t, parent.Dir, "src/app.go", "package app // committed\n")
	head, err := f.g.Commit(ctx, parent, CommitOptions{Message: "committed"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, parent.Dir, "src/lib.go", "package app // uncommitted\n")
	writeFile(t, parent.Dir, "staged.txt", "staged\n")
	gitT(t, parent.Dir, "add", "staged.txt")
	writeFile(t, parent.Dir, "untracked.txt", "untracked\n")
	writeFile(t, parent.Dir, ".env", "ignored, not forked\n")
	if err := os.Remove(filepath.Join(parent.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	statusBefore := gitT(t, parent.Dir, "status", "--porcelain")
	indexBefore := gitT(t, parent.Dir, "ls-files", "--stage")

	child, err := f.g.Fork(ctx, parent, f.wt("child"))
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, child.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("fork HEAD = %s, want parent's %s", got, head)
	}
	if child.Base != "main" {
		t.Errorf("fork base = %q", child.Base)
	}
	for rel, want := range map[string]string{
		"src/app.go":    "package app // committed\n",
		"src/lib.go":    "package app // uncommitted\n",
		"staged.txt":    "staged\n",
		"untracked.txt": "untracked\n",
		"README.md":     "",
		".env":          "",
	} {
		if got := readFile(t, child.Dir, rel); got != want {
			t.Errorf("fork %s = %q, want %q", rel, got, want)
		}
	}
	if st := gitT(t, child.Dir, "diff", "--cached", "--name-only"); st != "" {
		t.Errorf("fork has staged changes: %q", st)
	}
	if got := gitT(t, parent.Dir, "status", "--porcelain"); got != statusBefore {
		t.Errorf("parent status changed:\n%s\nwas\n%s", got, statusBefore)
	}
	if got := gitT(t, parent.Dir, "ls-files", "--stage"); got != indexBefore {
		t.Error("parent index changed")
	}
	if got := gitT(t, parent.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("parent HEAD moved to %s", got)
	}
	if readFile(t, parent.Dir, ".env") == "" {
		t.Error("parent lost its .env")
	}
	if again, err := f.g.Fork(ctx, parent, f.wt("child")); err != nil || again != child {
		t.Errorf("Fork again = %+v, %v", again, err)
	}
	f.assertMainUntouched()
}

func TestInclude(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	writeFile(t, f.main, ".env", "SECRET=1\n")
	writeFile(t, f.main, "local/dev.conf", "conf\n")
	writeFile(t, f.main, "local/deep/x.conf", "deep\n")
	writeFile(t, f.main, "server.key", "ignored but not listed\n")
	writeFile(t, f.main, "notes.txt", "untracked, not ignored\n")
	writeFile(t, f.main, IncludeFile, "# copied into every worktree\n.env\nlocal/\nnotes.txt\n")
	if err := os.Symlink("dev.conf", filepath.Join(f.main, "local", "link.conf")); err != nil {
		t.Fatal(err)
	}
	wt := f.create("a")
	for rel, want := range map[string]string{
		".env":              "SECRET=1\n",
		"local/dev.conf":    "conf\n",
		"local/deep/x.conf": "deep\n",
		"local/link.conf":   "conf\n",
		"server.key":        "",
		"notes.txt":         "",
	} {
		if got := readFile(t, wt.Dir, rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(wt.Dir, "local", "link.conf")); err != nil || target != "dev.conf" {
		t.Errorf("link.conf: %q, %v", target, err)
	}
	if st := gitT(t, wt.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("included files show in status: %q", st)
	}
}

func TestRemove(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	branchExists := func(b string) bool {
		return gitT(t, f.main, "branch", "--list", b) != ""
	}

	dirty := f.create("dirty")
	writeFile(t, dirty.Dir, "a.txt", "a\n")
	writeFile(t, dirty.Dir, "src/app.go", "changed\n")
	err := f.g.Remove(ctx, dirty, false)
	var ue *UnpushedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnpushed) || !slices.Equal(ue.Files, []string{"src/app.go", "a.txt"}) || ue.Commits != 0 {
		t.Errorf("Remove of uncommitted work = %v (%+v)", err, ue)
	}
	if _, err := os.Stat(dirty.Dir); err != nil {
		t.Errorf("refused Remove removed the worktree: %v", err)
	}

	if _, err := f.g.Commit(ctx, dirty, CommitOptions{Message: "c1"}); err != nil {
		t.Fatal(err)
	}
	err = f.g.Remove(ctx, dirty, false)
	if !errors.As(err, &ue) || ue.Commits != 1 || len(ue.Files) != 0 {
		t.Errorf("Remove of an unpushed commit = %v", err)
	}
	t.Logf("what would be lost: %v", err)

	if err := f.g.Remove(ctx, dirty, true); err != nil {
		t.Fatalf("Remove with discard: %v", err)
	}
	if _, err := os.Stat(dirty.Dir); !os.IsNotExist(err) || branchExists(dirty.Branch) {
		t.Errorf("discarded worktree or branch still there (%v)", err)
	}

	pushed := f.create("pushed")
	writeFile(t, pushed.Dir, "p.txt", "p\n")
	if _, err := f.g.Commit(ctx, pushed, CommitOptions{Message: "p"}); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Push(ctx, pushed, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, pushed, false); err != nil {
		t.Fatalf("Remove of pushed work: %v", err)
	}
	if !branchExists(pushed.Branch) {
		t.Error("a pushed, unmerged branch was deleted")
	}

	fresh := f.create("fresh") // no commits: merged by definition
	if err := f.g.Remove(ctx, fresh, false); err != nil || branchExists(fresh.Branch) {
		t.Errorf("Remove of a fresh worktree: %v, branch kept %v", err, branchExists(fresh.Branch))
	}

	gone := f.create("gone")
	if err := os.RemoveAll(gone.Dir); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, gone, false); err != nil {
		t.Errorf("Remove of a vanished worktree: %v", err)
	}
	if list, err := f.g.List(ctx, f.main); err != nil || len(list) != 1 {
		t.Errorf("worktrees left besides the main clone: %+v, %v", list, err)
	}
	f.assertMainUntouched()
}

func TestListPrune(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	a, b := f.create("a"), f.create("b")
	if err := os.RemoveAll(b.Dir); err != nil {
		t.Fatal(err)
	}
	list, err := f.g.List(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 || list[0].Branch != "" || list[1].Branch != a.Branch || list[1].Prunable || !list[2].Prunable {
		t.Fatalf("List = %+v", list)
	}
	if !samePath(list[1].Dir, a.Dir) || list[1].Head == "" {
		t.Errorf("entry a = %+v", list[1])
	}
	if err := f.g.Prune(ctx, f.main); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.g.List(ctx, f.main); len(list) != 2 {
		t.Errorf("after Prune: %+v", list)
	}
}
