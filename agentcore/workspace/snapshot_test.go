package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatString(t *testing.T) {
	tests := []struct {
		s    Stat
		want string
	}{
		{Stat{}, "no changes"},
		{Stat{Files: 1, Insertions: 1}, "1 file changed, +1 \u22120"},
		{Stat{Files: 3, Insertions: 40, Deletions: 2}, "3 files changed, +40 −2"},
	}
	for _, tt := range tests {
		if got := tt.s.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.s, got, tt.want)
		}
	}
}

func TestParseNumstat(t *testing.T) {
	out := "3\t1\tsrc/a.go\x00-\t-\timg.png\x000\t0\t\x00old name.txt\x00new\tname.txt\x00"
	s := parseNumstat(out)
	want := []FileStat{
		{Path: "src/a.go", Insertions: 3, Deletions: 1},
		{Path: "img.png", Binary: true},
		{Path: "new\tname.txt", OldPath: "old name.txt"},
	}
	if s.Files != 3 || s.Insertions != 3 || s.Deletions != 1 || len(s.Changes) != 3 {
		t.Fatalf("parseNumstat = %+v", s)
	}
	for i, w := range want {
		if s.Changes[i] != w {
			t.Errorf("change %d = %+v, want %+v", i, s.Changes[i], w)
		}
	}
	if s := parseNumstat(""); s.Files != 0 || s.Changes != nil {
		t.Errorf("empty: %+v", s)
	}
}

// TestSnapshotStat: a turn's snapshots see changes, deletions and untracked
// files, not ignored ones, and leave the worktree's index and HEAD alone.
func TestSnapshotStat(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	wt := f.create("a")
	writeFile(t, wt.Dir, "pending.txt", "staged by the agent\n")
	gitT(t, wt.Dir, "add", "pending.txt")
	before, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	index := gitT(t, wt.Dir, "ls-files", "--stage")
	status := gitT(t, wt.Dir, "status", "--porcelain")

	writeFile(t, wt.Dir, "src/app.go", "package app\n\nfunc A() int { return 10 }\nfunc C() {}\n")
	writeFile(t, wt.Dir, "docs/new.md", "one\ntwo\nthree\n")
	writeFile(t, wt.Dir, "secret.key", "ignored\n")
	if err := os.Remove(filepath.Join(wt.Dir, "src", "lib.go")); err != nil {
		t.Fatal(err)
	}
	after, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.g.Stat(ctx, wt, before, after)
	if err != nil {
		t.Fatal(err)
	}
	if st.Files != 3 || st.Insertions != 5 || st.Deletions != 4 {
		t.Errorf("Stat = %+v", st)
	}
	if st.String() != "3 files changed, +5 −4" {
		t.Errorf("footer %q", st.String())
	}
	for _, c := range st.Changes {
		if c.Path == "secret.key" || c.Path == "pending.txt" {
			t.Errorf("unexpected change %+v", c)
		}
	}
	if got := gitT(t, wt.Dir, "ls-files", "--stage"); got != index {
		t.Error("Snapshot changed the index")
	}
	if got := gitT(t, wt.Dir, "status", "--porcelain"); !strings.Contains(got, "?? docs/") || !strings.HasPrefix(status, "A  pending.txt") {
		t.Errorf("status after snapshots: %q", got)
	}
	// A file of the last snapshot that HEAD lacks, changed again and
	// staged differently by the agent.
	writeFile(t, wt.Dir, "docs/new.md", "one\ntwo\nthree\nfour\n")
	writeFile(t, wt.Dir, "pending.txt", "staged, then changed\n")
	changed, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatalf("Snapshot of files changed since the last one: %v", err)
	}
	if st, _ := f.g.Stat(ctx, wt, after, changed); st.Files != 2 || st.Insertions != 2 || st.Deletions != 1 {
		t.Errorf("Stat of the second turn = %+v", st)
	}
	writeFile(t, wt.Dir, "docs/new.md", "one\ntwo\nthree\n")
	writeFile(t, wt.Dir, "pending.txt", "staged by the agent\n")
	if back, _ := f.g.Snapshot(ctx, wt); back != after {
		t.Errorf("Snapshot of the files put back = %s, want %s", back, after)
	}
	if same, _ := f.g.Stat(ctx, wt, after, after); same.Files != 0 {
		t.Errorf("Stat of one tree: %+v", same)
	}
	if again, _ := f.g.Snapshot(ctx, wt); again != after {
		t.Errorf("Snapshot of an unchanged tree = %s, want %s", again, after)
	}
	if !fileExists(filepath.Join(wt.Dir, ".git", snapshotIndex)) {
		t.Error("the snapshot index is not in the clone's git directory")
	}
	// Committed, and the committed file changed again: the snapshot index
	// follows HEAD.
	if _, err := f.g.Commit(ctx, wt, CommitOptions{Message: "turn"}); err != nil {
		t.Fatal(err)
	}
	if again, _ := f.g.Snapshot(ctx, wt); again != Tree(gitT(t, wt.Dir, "rev-parse", "HEAD^{tree}")) {
		t.Errorf("Snapshot after a commit = %s, want HEAD's tree", again)
	}
	writeFile(t, wt.Dir, "docs/new.md", "one\n")
	last, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.g.Stat(ctx, wt, Tree(gitT(t, wt.Dir, "rev-parse", "HEAD^{tree}")), last); st.Files != 1 || st.Deletions != 2 {
		t.Errorf("Stat after a commit = %+v", st)
	}
	if gitTry(f.main, "cat-file", "-e", string(last)) == nil {
		t.Error("a snapshot reached the main clone")
	}
}

func TestBranchDiff(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	wt := f.create("a")
	writeFile(t, wt.Dir, "src/app.go", "package app // committed\n")
	if _, err := f.g.Commit(ctx, wt, CommitOptions{Message: "one"}); err != nil {
		t.Fatal(err)
	}
	writeFile(t, wt.Dir, "README.md", "# demo\nuncommitted\n")
	writeFile(t, wt.Dir, "untracked.txt", "new\n")
	// The base moves on meanwhile: its change is not the chat's.
	f.pushFromElsewhere("main", "other.txt", "someone else\n")
	other := f.create("b")
	writeFile(t, other.Dir, "b.txt", "b\n")
	if _, err := f.g.Commit(ctx, other, CommitOptions{Message: "b"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Merge(ctx, other, MergeOptions{}); err != nil {
		t.Fatal(err)
	}

	patch, st, err := f.g.BranchDiff(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"+package app // committed", "+uncommitted", "+++ b/untracked.txt"} {
		if !strings.Contains(string(patch), want) {
			t.Errorf("patch lacks %q:\n%s", want, patch)
		}
	}
	for _, not := range []string{"b.txt", "other.txt"} {
		if strings.Contains(string(patch), not) {
			t.Errorf("patch has the base's %s", not)
		}
	}
	if st.Files != 3 {
		t.Errorf("Stat = %+v", st)
	}

	// What ships is what was imported: committed work only, against the
	// base in the main clone.
	if _, _, err := f.g.ShipDiff(ctx, wt, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("ShipDiff before Import = %v, want ErrInvalid", err)
	}
	head := f.importAll(wt)
	ship, sst, err := f.g.ShipDiff(ctx, wt, head)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ship), "+package app // committed") || strings.Contains(string(ship), "uncommitted") ||
		strings.Contains(string(ship), "untracked.txt") || strings.Contains(string(ship), "b.txt") {
		t.Errorf("ShipDiff:\n%s", ship)
	}
	if sst.Files != 1 || sst.Insertions != 1 {
		t.Errorf("ShipDiff Stat = %+v", sst)
	}
	if again, _, err := f.g.ShipDiff(ctx, wt, ""); err != nil || string(again) != string(ship) {
		t.Errorf("ShipDiff of the imported branch = %v", err)
	}
}
