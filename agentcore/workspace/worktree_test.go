package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestChatsIsolated: two chats of one project change the same file; each
// clone holds only its own change, has its own object store borrowing the
// main clone's, and the main clone is untouched.
func TestChatsIsolated(t *testing.T) {
	t.Parallel()
	testChatsIsolated(t, newFixture(t, Options{}))
}

func testChatsIsolated(t *testing.T, f *fixture) {
	a, b := f.create("a"), f.create("b")
	writeFile(t, a.Dir, "src/app.go", "package app // a\n")
	writeFile(t, b.Dir, "src/app.go", "package app // b\n")
	writeFile(t, b.Dir, "new.txt", "b only\n")
	id, err := f.g.Commit(t.Context(), a, CommitOptions{Message: "a"})
	if err != nil {
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
	for _, wt := range []Worktree{a, b} {
		if fi, err := os.Stat(filepath.Join(wt.Dir, ".git")); err != nil || !fi.IsDir() {
			t.Errorf("%s/.git is not a repository of its own: %v", wt.Dir, err)
		}
		alt := strings.TrimSpace(readFile(t, wt.Dir, ".git/objects/info/alternates"))
		if !samePath(alt, filepath.Join(f.main, ".git", "objects")) {
			t.Errorf("%s borrows from %q", wt.Dir, alt)
		}
		if refs := gitT(t, wt.Dir, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/"+wt.Branch+"\nrefs/remotes/origin/HEAD\nrefs/remotes/origin/main" {
			t.Errorf("%s refs:\n%s", wt.Dir, refs)
		}
	}
	// a's commit is in a's store only: not in b's, not in the main clone's.
	for _, repo := range []string{b.Dir, f.main} {
		if gitTry(repo, "cat-file", "-e", id) == nil {
			t.Errorf("a's commit is in %s", repo)
		}
	}
	if out, err := os.ReadDir(filepath.Join(f.main, ".git", "worktrees")); err == nil && len(out) > 0 {
		t.Errorf("the main clone has worktrees: %v", out)
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
	if err != nil || !sameChat(again, a) {
		t.Fatalf("Create again = %+v, %v; want %+v", again, err, a)
	}
	if readFile(t, a.Dir, "wip.txt") == "" {
		t.Error("reuse lost the clone's work")
	}

	// The directory vanished (a wiped disk) after an Import: Create makes it
	// again on the same branch, at the imported commit.
	id, err := f.g.Commit(ctx, a, CommitOptions{Message: "wip"})
	if err != nil {
		t.Fatal(err)
	}
	f.importAll(a)
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Create(ctx, f.wt("a")); err != nil {
		t.Fatalf("Create after the directory vanished: %v", err)
	}
	if got := gitT(t, a.Dir, "rev-parse", "HEAD"); got != id {
		t.Errorf("recreated clone at %s, want the imported %s", got, id)
	}
	if got := gitT(t, a.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != a.Branch {
		t.Errorf("recreated clone on %q", got)
	}

	// A clone left half made (a crash) is made anew.
	reg, err := f.g.registry(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	half := f.wt("half")
	if err := reg.put(record{Dir: half.Dir, Branch: half.Branch, Base: "main"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, half.Dir, "junk", "half made\n")
	if _, err := f.g.Create(ctx, half); err != nil {
		t.Fatalf("Create over a half-made clone: %v", err)
	}
	if readFile(t, half.Dir, "junk") != "" || readFile(t, half.Dir, "README.md") != seedFiles["README.md"] {
		t.Error("the half-made clone was not made anew")
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
	inside := f.wt("g")
	inside.Dir = filepath.Join(f.main, "g")
	tests := []struct {
		name string
		wt   Worktree
		want error
	}{
		{"branch checked out elsewhere", elsewhere, ErrBranchInUse},
		{"dir is another chat's clone", onA, ErrDirInUse},
		{"dir not empty", full, ErrDirInUse},
		{"base missing", noBase, ErrBaseMissing},
		{"bad branch", badBranch, ErrInvalid},
		{"relative dir", relative, ErrInvalid},
		{"inside the main clone", inside, ErrInvalid},
	}
	for _, tt := range tests {
		if _, err := f.g.Create(t.Context(), tt.wt); !errors.Is(err, tt.want) {
			t.Errorf("%s: Create = %v, want %v", tt.name, err, tt.want)
		}
	}
	if fileExists(filepath.Join(f.root, "trees", "d")) {
		t.Error("a failed Create left its directory")
	}
	strict := New(Options{RequireAgent: true})
	if _, err := strict.Create(t.Context(), f.wt("h")); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Agent") {
		t.Errorf("Create without an Agent hook under RequireAgent = %v", err)
	}
	if fileExists(filepath.Join(f.root, "trees", "h")) {
		t.Error("RequireAgent: something was made")
	}
}

// TestFork: the fork starts at the parent's HEAD with the parent's
// uncommitted work, and the parent's files, index and HEAD do not change.
func TestFork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	testFork(t, f)
}

func testFork(t *testing.T, f *fixture) {
	ctx := t.Context()
	parent := f.create("parent")
	writeFile(t, parent.Dir, "src/app.go", "package app // committed\n")
	head, err := f.g.Commit(ctx, parent, CommitOptions{Message: "committed"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, parent.Dir, "src/lib.go", "package app // uncommitted\n")
	writeFile(t, parent.Dir, "staged.txt", "staged\n")
	f.gitChat(parent.Dir, "add", "staged.txt")
	writeFile(t, parent.Dir, "untracked.txt", "untracked\n")
	writeFile(t, parent.Dir, ".env", "ignored, not forked\n")
	if err := os.Remove(filepath.Join(parent.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	statusBefore := gitT(t, parent.Dir, "status", "--porcelain")
	indexBefore := gitT(t, parent.Dir, "ls-files", "--stage")
	refsBefore := gitT(t, parent.Dir, "for-each-ref")

	child, err := f.g.Fork(ctx, parent, f.wt("child"))
	if err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, child.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("fork HEAD = %s, want parent's %s", got, head)
	}
	if got := gitT(t, child.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != child.Branch {
		t.Errorf("fork on %q", got)
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
	if got := gitT(t, parent.Dir, "for-each-ref"); got != refsBefore {
		t.Errorf("parent refs changed:\n%s", got)
	}
	if got := gitT(t, parent.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("parent HEAD moved to %s", got)
	}
	if readFile(t, parent.Dir, ".env") == "" {
		t.Error("parent lost its .env")
	}
	// The fork point is in the main clone's own store, kept by the child's
	// branch there.
	if got := gitT(t, f.main, "rev-parse", "refs/heads/"+child.Branch); got != head {
		t.Errorf("main's %s = %s, want %s", child.Branch, got, head)
	}
	gitT(t, f.main, "cat-file", "-e", head)
	if again, err := f.g.Fork(ctx, parent, f.wt("child")); err != nil || !sameChat(again, child) {
		t.Errorf("Fork again = %+v, %v", again, err)
	}
	f.assertMainUntouched()
}

func TestInclude(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	testInclude(t, f)
}

func testInclude(t *testing.T, f *fixture) []Worktree {
	writeFile(t, f.main, ".env", "SECRET=1\n")
	writeFile(t, f.main, "local/dev.conf", "conf\n")
	writeFile(t, f.main, "local/deep/x.conf", "deep\n")
	writeFile(t, f.main, "local/empty.conf", "")
	writeFile(t, f.main, "local/bin.dat", "\x00\x01\x02binary\xff")
	writeFile(t, f.main, "local/we\"ird\tname ü.conf", "weird\n")
	writeFile(t, f.main, "local/run.sh", "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(f.main, "local", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, f.main, "server.key", "ignored but not listed\n")
	writeFile(t, f.main, "notes.txt", "untracked, not ignored\n")
	writeFile(t, f.main, IncludeFile, "# copied into every clone\n.env\nlocal/\nnotes.txt\n")
	if err := os.Symlink("dev.conf", filepath.Join(f.main, "local", "link.conf")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		".env":                       "SECRET=1\n",
		"local/dev.conf":             "conf\n",
		"local/deep/x.conf":          "deep\n",
		"local/link.conf":            "conf\n",
		"local/bin.dat":              "\x00\x01\x02binary\xff",
		"local/we\"ird\tname ü.conf": "weird\n",
		"local/run.sh":               "#!/bin/sh\n",
		"server.key":                 "",
		"notes.txt":                  "",
	}
	check := func(wt Worktree) {
		t.Helper()
		for rel, content := range want {
			if got := readFile(t, wt.Dir, rel); got != content {
				t.Errorf("%s: %s = %q, want %q", wt.Branch, rel, got, content)
			}
		}
		if fi, err := os.Stat(filepath.Join(wt.Dir, "local", "empty.conf")); err != nil || fi.Size() != 0 {
			t.Errorf("empty.conf: %v", err)
		}
		if fi, err := os.Stat(filepath.Join(wt.Dir, "local", "run.sh")); err != nil || fi.Mode()&0o100 == 0 {
			t.Errorf("run.sh not executable: %v", err)
		}
		if target, err := os.Readlink(filepath.Join(wt.Dir, "local", "link.conf")); err != nil || target != "dev.conf" {
			t.Errorf("link.conf: %q, %v", target, err)
		}
		if st := gitT(t, wt.Dir, "status", "--porcelain"); st != "" {
			t.Errorf("included files show in status: %q", st)
		}
	}
	a := f.create("a")
	check(a)
	// The include file committed on the base wins over the main clone's
	// (whose files stay as cloned).
	writeFile(t, a.Dir, IncludeFile, ".env\n")
	if _, err := f.g.Commit(t.Context(), a, CommitOptions{Message: "include less"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Merge(t.Context(), a, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	b := f.create("b")
	if readFile(t, b.Dir, ".env") != "SECRET=1\n" || fileExists(filepath.Join(b.Dir, "local")) {
		t.Error("the base's include file was not used")
	}
	return []Worktree{a, b}
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
	err := f.g.Remove(ctx, dirty, RemoveOptions{})
	var ue *UnpushedError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUnpushed) || !slices.Equal(ue.Files, []string{"src/app.go", "a.txt"}) || ue.Commits != 0 {
		t.Errorf("Remove of uncommitted work = %v (%+v)", err, ue)
	}
	if _, err := os.Stat(dirty.Dir); err != nil {
		t.Errorf("refused Remove removed the clone: %v", err)
	}

	if _, err := f.g.Commit(ctx, dirty, CommitOptions{Message: "c1"}); err != nil {
		t.Fatal(err)
	}
	err = f.g.Remove(ctx, dirty, RemoveOptions{})
	if !errors.As(err, &ue) || ue.Commits != 1 || len(ue.Files) != 0 {
		t.Errorf("Remove of an unpushed commit = %v", err)
	}
	t.Logf("what would be lost: %v", err)
	head := f.importAll(dirty) // imported is not pushed
	if err := f.g.Remove(ctx, dirty, RemoveOptions{}); !errors.As(err, &ue) || ue.Commits != 1 {
		t.Errorf("Remove of an imported, unpushed commit = %v", err)
	}
	// Pushed elsewhere, as the caller says: nothing lost.
	if p, err := f.g.Unpushed(ctx, dirty, head); err != nil || !p.Clean() {
		t.Errorf("Unpushed with the pushed head = %+v, %v", p, err)
	}

	var removed []string
	f.g.removeDir = func(_ context.Context, dir string) error {
		removed = append(removed, dir)
		return os.RemoveAll(dir)
	}
	if err := f.g.Remove(ctx, dirty, RemoveOptions{Discard: true}); err != nil {
		t.Fatalf("Remove with discard: %v", err)
	}
	if _, err := os.Stat(dirty.Dir); !os.IsNotExist(err) || branchExists(dirty.Branch) {
		t.Errorf("discarded clone or branch still there (%v)", err)
	}
	if !slices.Equal(removed, []string{dirty.Dir}) {
		t.Errorf("RemoveDir calls: %q", removed)
	}

	pushed := f.create("pushed")
	writeFile(t, pushed.Dir, "p.txt", "p\n")
	if _, err := f.g.Commit(ctx, pushed, CommitOptions{Message: "p"}); err != nil {
		t.Fatal(err)
	}
	f.importAll(pushed)
	if err := f.g.Push(ctx, pushed, PushOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, pushed, RemoveOptions{}); err != nil {
		t.Fatalf("Remove of pushed work: %v", err)
	}
	if !branchExists(pushed.Branch) {
		t.Error("a pushed, unmerged branch was deleted")
	}

	fresh := f.create("fresh") // no commits: merged by definition
	if err := f.g.Remove(ctx, fresh, RemoveOptions{}); err != nil || branchExists(fresh.Branch) {
		t.Errorf("Remove of a fresh clone: %v, branch kept %v", err, branchExists(fresh.Branch))
	}

	gone := f.create("gone")
	if err := os.RemoveAll(gone.Dir); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, gone, RemoveOptions{}); err != nil {
		t.Errorf("Remove of a vanished clone: %v", err)
	}
	if list, err := f.g.List(ctx, f.main); err != nil || len(list) != 0 {
		t.Errorf("clones left: %+v, %v", list, err)
	}
	f.assertMainUntouched()
}

func TestListPrune(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	a, b := f.create("a"), f.create("b")
	writeFile(t, a.Dir, "a.txt", "a\n")
	if _, err := f.g.Commit(ctx, a, CommitOptions{Message: "a"}); err != nil {
		t.Fatal(err)
	}
	head := f.importAll(a)
	if err := os.RemoveAll(b.Dir); err != nil {
		t.Fatal(err)
	}
	list, err := f.g.List(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Branch != a.Branch || list[0].Prunable || !list[1].Prunable || list[1].Branch != b.Branch {
		t.Fatalf("List = %+v", list)
	}
	if list[0].Dir != a.Dir || list[0].Head != head || list[0].Base != "main" || !list[0].Ready || list[1].Head != "" {
		t.Errorf("entries = %+v", list)
	}
	if err := f.g.Prune(ctx, f.main); err != nil {
		t.Fatal(err)
	}
	if list, _ := f.g.List(ctx, f.main); len(list) != 1 {
		t.Errorf("after Prune: %+v", list)
	}
	if info, err := os.Stat(filepath.Join(f.main, ".git", "threadline")); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the registry is not the bot's alone: %v %v", info.Mode(), err)
	}
}
