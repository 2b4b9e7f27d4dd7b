package workspace

import (
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
	if same, _ := f.g.Stat(ctx, wt, after, after); same.Files != 0 {
		t.Errorf("Stat of one tree: %+v", same)
	}
	if again, _ := f.g.Snapshot(ctx, wt); again != after {
		t.Errorf("Snapshot of an unchanged tree = %s, want %s", again, after)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(f.main, ".git", "worktrees", "a", "threadline-snapshot-*")); len(leftovers) > 0 {
		t.Errorf("temporary index left: %v", leftovers)
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
}
