package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
)

// commitIn writes files into wt and commits them through the runner.
func (f *fixture) commitIn(wt Worktree, files map[string]string) string {
	f.t.Helper()
	for rel, content := range files {
		writeFile(f.t, wt.Dir, rel, content)
	}
	id, err := f.g.Commit(f.t.Context(), wt, CommitOptions{Message: "change"})
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

// TestMerge lands two chats one after the other: the second is rebased onto
// the first; the base moves locally and on origin, and no other tree
// changes.
func TestMerge(t *testing.T) {
	t.Parallel()
	testMerge(t, newFixture(t, Options{}))
}

func testMerge(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.create("a"), f.create("b")
	f.commitIn(a, map[string]string{"a.txt": "a\n"})
	f.commitIn(b, map[string]string{"b.txt": "b\n", "src/lib.go": "package app // b\n"})
	before := gitT(t, f.main, "rev-parse", "refs/heads/main")

	la, err := f.g.Merge(ctx, a, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if la.From != before || la.Commits != 1 || la.To != gitT(t, a.Dir, "rev-parse", "HEAD") {
		t.Errorf("Landed = %+v", la)
	}
	if readFile(t, b.Dir, "a.txt") != "" {
		t.Error("a's merge changed b's files")
	}
	lb, err := f.g.Merge(ctx, b, MergeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lb.From != la.To || lb.Commits != 1 {
		t.Errorf("Landed = %+v", lb)
	}
	for _, repo := range []string{f.main, f.origin} {
		if got := gitT(t, repo, "rev-parse", "refs/heads/main"); got != lb.To {
			t.Errorf("%s main = %s, want %s", repo, got, lb.To)
		}
	}
	if got := gitT(t, f.main, "rev-list", "--count", before+"..main"); got != "2" {
		t.Errorf("main gained %s commits, want 2 (linear)", got)
	}
	if readFile(t, b.Dir, "a.txt") != "a\n" {
		t.Error("b was not rebased onto a")
	}
	f.assertMainUntouched()
	if gitT(t, f.main, "rev-parse", "HEAD") != before {
		t.Error("the main clone's HEAD moved")
	}

	if l, err := f.g.Merge(ctx, b, MergeOptions{}); err != nil || l.Commits != 0 || l.From != l.To {
		t.Errorf("Merge again = %+v, %v; want nothing landed", l, err)
	}
	if err := f.g.Remove(ctx, b, RemoveOptions{}); err != nil {
		t.Errorf("Remove after merge: %v", err)
	}
	if gitT(t, f.main, "branch", "--list", b.Branch) != "" {
		t.Error("merged branch kept")
	}
}

// TestMergeConflict: a conflict lists the files, lands nothing and leaves
// the clone as it was.
func TestMergeConflict(t *testing.T) {
	t.Parallel()
	testMergeConflict(t, newFixture(t, Options{}))
}

func testMergeConflict(t *testing.T, f *fixture) {
	ctx := t.Context()
	a, b := f.create("a"), f.create("b")
	f.commitIn(a, map[string]string{"src/app.go": "package app // a\n"})
	head := f.commitIn(b, map[string]string{"src/app.go": "package app // b\n", "b.txt": "b\n"})
	if _, err := f.g.Merge(ctx, a, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	base := gitT(t, f.main, "rev-parse", "refs/heads/main")

	_, err := f.g.Merge(ctx, b, MergeOptions{})
	var ce *ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, ErrConflict) || !slices.Equal(ce.Files, []string{"src/app.go"}) {
		t.Fatalf("Merge = %v, want a conflict in src/app.go", err)
	}
	t.Logf("conflict: %v", err)
	if got := gitT(t, f.main, "rev-parse", "refs/heads/main"); got != base {
		t.Error("something landed")
	}
	if got := gitT(t, f.origin, "rev-parse", "refs/heads/main"); got != base {
		t.Error("something was pushed")
	}
	if got := gitT(t, b.Dir, "rev-parse", "HEAD"); got != head {
		t.Errorf("b's HEAD moved to %s", got)
	}
	if gitTry(f.main, "cat-file", "-e", head) == nil {
		t.Error("b's commit reached the main clone")
	}
	if got := gitT(t, b.Dir, "status", "--porcelain"); got != "" {
		t.Errorf("b's status: %q", got)
	}
	if got := gitT(t, b.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != b.Branch {
		t.Errorf("b is on %q", got)
	}
	if readFile(t, b.Dir, "src/app.go") != "package app // b\n" {
		t.Error("b's file changed")
	}
	gitDir := gitT(t, b.Dir, "rev-parse", "--absolute-git-dir")
	if fileExists(filepath.Join(gitDir, "rebase-merge")) || fileExists(filepath.Join(gitDir, "rebase-apply")) {
		t.Error("a rebase is still in progress")
	}
	f.assertMainUntouched()
}

// TestMergeRemoteMoved: the base moved on origin before the merge (fetched
// and landed on top), and during it (the push refused, started over).
func TestMergeRemoteMoved(t *testing.T) {
	t.Parallel()
	var f *fixture
	var moves atomic.Int32 // pushes of the base to race with
	f = newFixture(t, Options{Cmd: func(cmd *exec.Cmd) {
		if len(cmd.Args) > 2 && cmd.Args[1] == "push" && moves.Load() > 0 {
			moves.Add(-1)
			f.pushFromElsewhere("main", "race.txt", cmd.Args[len(cmd.Args)-1]+"\n")
		}
	}})
	ctx := t.Context()
	a := f.create("a")
	f.commitIn(a, map[string]string{"a.txt": "a\n"})
	early := f.pushFromElsewhere("main", "early.txt", "before the merge\n")

	moves.Store(1)
	l, err := f.g.Merge(ctx, a, MergeOptions{})
	if err != nil {
		t.Fatalf("Merge with the base moving once = %v", err)
	}
	if got := gitT(t, f.origin, "rev-parse", "refs/heads/main"); got != l.To {
		t.Errorf("origin main %s, landed %+v", got, l)
	}
	for _, id := range []string{early, gitT(t, f.origin, "rev-parse", "main~1")} {
		if !isAncestor(t, f.main, id, "refs/heads/main") {
			t.Errorf("%s is not below the landed main", id)
		}
	}
	if readFile(t, a.Dir, "race.txt") == "" || readFile(t, a.Dir, "early.txt") == "" {
		t.Error("the merge did not land on top of the moved base")
	}

	b := f.create("b")
	bHead := f.commitIn(b, map[string]string{"b.txt": "b\n"})
	moves.Store(mergeAttempts)
	_, err = f.g.Merge(ctx, b, MergeOptions{})
	if !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("Merge with the base always moving = %v, want ErrNotFastForward", err)
	}
	t.Logf("always moving: %v", err)
	if isAncestor(t, f.main, b.Branch, "refs/heads/main") {
		t.Error("b landed on the local main")
	}
	if got := gitT(t, b.Dir, "rev-parse", "HEAD"); got != bHead {
		t.Errorf("b's branch left at %s, want it back at %s", got, bHead)
	}
	if isAncestor(t, f.origin, gitT(t, b.Dir, "rev-parse", "HEAD"), "main") {
		t.Error("b landed on origin")
	}
	f.assertMainUntouched()
}

// isAncestor tells whether a is an ancestor of b in repo.
func isAncestor(t *testing.T, repo, a, b string) bool {
	t.Helper()
	cmd := exec.Command("git", "merge-base", "--is-ancestor", a, b)
	cmd.Dir, cmd.Env = repo, testEnv()
	return cmd.Run() == nil
}

func TestMergeRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	a := f.create("a")
	writeFile(t, a.Dir, "wip.txt", "wip\n")
	if _, err := f.g.Merge(ctx, a, MergeOptions{}); !errors.Is(err, ErrUncommitted) {
		t.Errorf("uncommitted work: %v", err)
	}
	if _, err := f.g.Commit(ctx, a, CommitOptions{Message: "wip"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Merge(ctx, a, MergeOptions{Base: "nope"}); !errors.Is(err, ErrBaseMissing) {
		t.Errorf("missing base: %v", err)
	}
	gitT(t, a.Dir, "checkout", "-q", "--detach")
	if _, err := f.g.Merge(ctx, a, MergeOptions{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("clone off its branch: %v", err)
	}
}

// TestLooseRepo: a channel's own repository (no clone, no remote, main
// checked out) makes chat clones; landing on its checked-out main is
// refused, landing on another branch works locally.
func TestLooseRepo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	loose := filepath.Join(f.root, "seed")
	if ok, err := f.g.IsRepo(ctx, loose); !ok || err != nil {
		t.Fatalf("IsRepo = %v, %v", ok, err)
	}
	gitT(t, loose, "branch", "release")
	wt, err := f.g.Create(ctx, Worktree{Main: loose, Dir: filepath.Join(f.root, "loose-a"), Branch: "threadline/a", Base: "main"})
	if err != nil {
		t.Fatal(err)
	}
	f.commitIn(wt, map[string]string{"a.txt": "a\n"})
	if _, err := f.g.Merge(ctx, wt, MergeOptions{}); !errors.Is(err, ErrBaseCheckedOut) {
		t.Errorf("Merge onto the checked-out main = %v, want ErrBaseCheckedOut", err)
	}
	l, err := f.g.Merge(ctx, wt, MergeOptions{Base: "release"})
	if err != nil || l.Commits != 1 || gitT(t, loose, "rev-parse", "release") != l.To {
		t.Errorf("Merge onto release = %+v, %v", l, err)
	}
	if st := gitT(t, loose, "status", "--porcelain"); st != "" || fileExists(filepath.Join(loose, "a.txt")) {
		t.Errorf("the loose repository's tree changed: %q", st)
	}
	if _, err := os.Stat(wt.Dir); err != nil {
		t.Error(err)
	}
}

// TestConcurrentChats: chats created, committed and merged at the same time
// all land, none overwriting another (the compare-and-swap), and the main
// clone stays untouched.
func TestConcurrentChats(t *testing.T) {
	t.Parallel()
	testConcurrentChats(t, newFixture(t, Options{}))
}

func testConcurrentChats(t *testing.T, f *fixture) {
	ctx := t.Context()
	names := []string{"c1", "c2", "c3", "c4"}
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			wt, err := f.g.Create(ctx, f.wt(name))
			if err == nil {
				writeFileErr(wt.Dir, name+".txt", name)
				_, err = f.g.Commit(ctx, wt, CommitOptions{Message: name})
			}
			for try := 0; err == nil || errors.Is(err, ErrNotFastForward); try++ {
				if try == 10 {
					break
				}
				if _, err = f.g.Merge(ctx, wt, MergeOptions{}); err == nil {
					break
				}
			}
			errs <- err
		}()
	}
	for range names {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, name := range names {
		if got := gitT(t, f.origin, "show", "main:"+name+".txt"); got != name {
			t.Errorf("%s.txt on origin's main = %q", name, got)
		}
	}
	if got := gitT(t, f.main, "rev-parse", "refs/heads/main"); got != gitT(t, f.origin, "rev-parse", "main") {
		t.Error("local and origin main differ")
	}
	f.assertMainUntouched()
}

// writeFileErr writes a file outside the test goroutine (no t.Fatal), as
// the chat's agent would when f has one (the owner of dir).
func writeFileErr(dir, rel, content string) {
	p := filepath.Join(dir, rel)
	os.WriteFile(p, []byte(content), 0o644)
	if fi, err := os.Stat(dir); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			os.Chown(p, int(st.Uid), int(st.Gid))
		}
	}
}
