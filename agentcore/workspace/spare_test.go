package workspace

import (
	"path/filepath"
	"testing"
)

// TestSpare: Create and Fork take a spare beside their directory, brought
// up to date with a base that moved since; a spare elsewhere or still being
// prepared is left alone.
func TestSpare(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	trees := filepath.Join(f.root, "trees")
	spare := filepath.Join(trees, ".spare-1")
	if err := f.g.Spare(ctx, f.main, "main", spare); err != nil {
		t.Fatal(err)
	}
	elsewhere := filepath.Join(f.root, "spares", "s")
	if err := f.g.Spare(ctx, f.main, "main", elsewhere); err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(trees, ".spare-busy")
	gitT(t, f.main, "worktree", "add", "-q", "--detach", "--lock", "--reason", spareBusy, busy, "main")

	// The base moves after the spare was made.
	first := f.create("first") // takes .spare-1
	f.commitIn(first, map[string]string{"moved.txt": "moved\n"})
	if _, err := f.g.Merge(ctx, first, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if fileExists(spare) {
		t.Error("the spare beside the worktree was not taken")
	}
	if err := f.g.Spare(ctx, f.main, "main", spare); err != nil {
		t.Fatal(err)
	}
	f.commitIn(f.create("second"), map[string]string{"more.txt": "more\n"}) // takes the new spare
	if err := f.g.Spare(ctx, f.main, "main", spare); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Merge(ctx, f.wt("second"), MergeOptions{}); err != nil {
		t.Fatal(err)
	}

	wt := f.create("third")
	if fileExists(spare) {
		t.Fatal("Create did not take the spare")
	}
	if got, want := gitT(t, wt.Dir, "rev-parse", "HEAD"), gitT(t, f.main, "rev-parse", "refs/heads/main"); got != want {
		t.Errorf("worktree from a spare at %s, want the moved base %s", got, want)
	}
	if got := gitT(t, wt.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
		t.Errorf("on %q", got)
	}
	if readFile(t, wt.Dir, "moved.txt") != "moved\n" || readFile(t, wt.Dir, "more.txt") != "more\n" {
		t.Error("files of the moved base missing")
	}
	if st := gitT(t, wt.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("status %q", st)
	}

	// Fork takes a spare too and ends up at the parent's head.
	writeFile(t, wt.Dir, "wip.txt", "wip\n")
	if err := f.g.Spare(ctx, f.main, "main", spare); err != nil {
		t.Fatal(err)
	}
	child, err := f.g.Fork(ctx, wt, f.wt("child"))
	if err != nil {
		t.Fatal(err)
	}
	if fileExists(spare) || readFile(t, child.Dir, "wip.txt") != "wip\n" {
		t.Error("Fork did not take the spare or lost the parent's work")
	}

	list, err := f.g.List(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	var spares, busies int
	for _, e := range list {
		if e.Spare {
			spares++
		}
		if e.LockReason == spareBusy {
			busies++
		}
	}
	if spares != 1 || busies != 1 {
		t.Errorf("spares %d (want the one elsewhere), busy %d: %+v", spares, busies, list)
	}
	if err := f.g.DropSpares(ctx, f.main); err != nil {
		t.Fatal(err)
	}
	if fileExists(elsewhere) || fileExists(busy) {
		t.Error("DropSpares left spares")
	}
	f.assertMainUntouched()
}

// TestConcurrentSpares: Creates racing for fewer spares, while more spares
// are being made, all succeed, each on its own branch.
func TestConcurrentSpares(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	trees := filepath.Join(f.root, "trees")
	for _, s := range []string{".spare-a", ".spare-b"} {
		if err := f.g.Spare(ctx, f.main, "main", filepath.Join(trees, s)); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"c1", "c2", "c3", "c4", "c5"}
	errs := make(chan error, len(names)+1)
	go func() { errs <- f.g.Spare(ctx, f.main, "main", filepath.Join(trees, ".spare-c")) }()
	for _, name := range names {
		go func() {
			_, err := f.g.Create(ctx, f.wt(name))
			errs <- err
		}()
	}
	for range len(names) + 1 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, name := range names {
		wt := f.wt(name)
		if got := gitT(t, wt.Dir, "rev-parse", "--abbrev-ref", "HEAD"); got != wt.Branch {
			t.Errorf("%s is on %q", name, got)
		}
		if st := gitT(t, wt.Dir, "status", "--porcelain"); st != "" || readFile(t, wt.Dir, "README.md") != seedFiles["README.md"] {
			t.Errorf("%s: status %q", name, st)
		}
	}
	list, err := f.g.List(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	var chats, spares int
	for _, e := range list {
		switch {
		case e.Spare:
			spares++
		case e.Branch != "":
			chats++
		}
	}
	if chats != len(names) || spares > 1 { // three spares, at least two taken
		t.Errorf("worktrees: %+v", list)
	}
	f.assertMainUntouched()
}
