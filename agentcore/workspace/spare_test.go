package workspace

import (
	"path/filepath"
	"testing"
)

// TestSpare: Create and Fork take a spare of their base beside their
// directory, brought up to date with a base that moved since; a spare
// elsewhere, of another base or still being made is left alone.
func TestSpare(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	trees := filepath.Join(f.root, "trees")
	spare := filepath.Join(trees, ".spare-1")
	if err := f.g.Spare(ctx, f.main, "main", spare, f.agent); err != nil {
		t.Fatal(err)
	}
	if head := gitT(t, spare, "rev-parse", "--abbrev-ref", "HEAD"); head != "HEAD" {
		t.Errorf("spare on %q, want a detached HEAD", head)
	}
	if refs := gitT(t, spare, "for-each-ref", "--format=%(refname)"); refs != "refs/remotes/origin/HEAD\nrefs/remotes/origin/main" {
		t.Errorf("spare refs: %q", refs)
	}
	elsewhere := filepath.Join(f.root, "spares", "s")
	if err := f.g.Spare(ctx, f.main, "main", elsewhere, f.agent); err != nil {
		t.Fatal(err)
	}
	gitT(t, f.main, "branch", "release", "main")
	other := filepath.Join(trees, ".spare-release")
	if err := f.g.Spare(ctx, f.main, "release", other, f.agent); err != nil {
		t.Fatal(err)
	}
	reg, err := f.g.registry(ctx, f.main)
	if err != nil {
		t.Fatal(err)
	}
	busy := filepath.Join(trees, ".spare-busy")
	if err := reg.put(record{Dir: busy, Base: "main", Spare: true}); err != nil { // being made
		t.Fatal(err)
	}

	// The base moves after the spare was made.
	first := f.create("first") // takes .spare-1
	f.commitIn(first, map[string]string{"moved.txt": "moved\n"})
	if _, err := f.g.Merge(ctx, first, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if fileExists(spare) {
		t.Error("the spare beside the clone was not taken")
	}
	if err := f.g.Spare(ctx, f.main, "main", spare, f.agent); err != nil {
		t.Fatal(err)
	}
	f.commitIn(f.create("second"), map[string]string{"more.txt": "more\n"}) // takes the new spare
	if err := f.g.Spare(ctx, f.main, "main", spare, f.agent); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Merge(ctx, f.wt("second"), MergeOptions{}); err != nil {
		t.Fatal(err)
	}

	wt := f.create("third")
	if fileExists(spare) {
		t.Fatal("Create did not take the spare")
	}
	base := gitT(t, f.main, "rev-parse", "refs/heads/main")
	if got := gitT(t, wt.Dir, "rev-parse", "HEAD"); got != base {
		t.Errorf("clone from a spare at %s, want the moved base %s", got, base)
	}
	if got := gitT(t, wt.Dir, "rev-parse", "refs/remotes/origin/main"); got != base {
		t.Errorf("clone's origin/main at %s, want %s", got, base)
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
	if err := f.g.Spare(ctx, f.main, "main", spare, f.agent); err != nil {
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
	var ready, busies int
	for _, e := range list {
		switch {
		case e.Spare && e.Ready:
			ready++
		case e.Spare:
			busies++
		}
	}
	if ready != 2 || busies != 1 {
		t.Errorf("spares ready %d (want the one elsewhere and release's), busy %d: %+v", ready, busies, list)
	}
	if err := f.g.DropSpares(ctx, f.main); err != nil {
		t.Fatal(err)
	}
	if fileExists(elsewhere) || fileExists(other) {
		t.Error("DropSpares left spares")
	}
	list, _ = f.g.List(ctx, f.main)
	for _, e := range list {
		if e.Spare {
			t.Errorf("spare still recorded: %+v", e)
		}
	}
	f.assertMainUntouched()
}

// TestConcurrentSpares: Creates racing for fewer spares, while more spares
// are being made, all succeed, each on its own branch.
func TestConcurrentSpares(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	testConcurrentSpares(t, f)
}

func testConcurrentSpares(t *testing.T, f *fixture) {
	ctx := t.Context()
	trees := filepath.Join(f.root, "trees")
	for _, s := range []string{".spare-a", ".spare-b"} {
		if err := f.g.Spare(ctx, f.main, "main", filepath.Join(trees, s), f.agent); err != nil {
			t.Fatal(err)
		}
	}
	names := []string{"c1", "c2", "c3", "c4", "c5"}
	errs := make(chan error, len(names)+1)
	go func() { errs <- f.g.Spare(ctx, f.main, "main", filepath.Join(trees, ".spare-c"), f.agent) }()
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
		case e.Branch != "" && e.Ready && !e.Prunable:
			chats++
		}
	}
	if chats != len(names) || spares > 1 { // three spares, at least two taken
		t.Errorf("clones: %+v", list)
	}
	f.assertMainUntouched()
}
