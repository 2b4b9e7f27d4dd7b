package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestClone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	if head := gitT(t, f.main, "rev-parse", "--abbrev-ref", "HEAD"); head != "HEAD" {
		t.Errorf("main clone HEAD is %q, want detached", head)
	}
	if gitT(t, f.main, "rev-parse", "HEAD") != gitT(t, f.main, "rev-parse", "refs/heads/main") {
		t.Error("main clone HEAD is not at the base")
	}
	f.assertMainUntouched()
	if err := f.g.Check(ctx, f.main, "main"); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := f.g.Clone(ctx, f.origin, f.main, "main"); err != nil {
		t.Errorf("Clone again (restart): %v", err)
	}
	if err := f.g.Clone(ctx, filepath.Join(f.root, "seed"), f.main, "main"); !errors.Is(err, ErrCloneFailed) {
		t.Errorf("Clone of another source into the same dir: %v, want ErrCloneFailed", err)
	}
}

func TestCloneFailures(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	gitT(t, f.origin, "tag", "v1", "main")
	tests := []struct {
		name, src, base string
		want            error
	}{
		{"missing base", f.origin, "nope", ErrBaseMissing},
		{"base is a tag", f.origin, "v1", ErrBaseMissing},
		{"missing source", filepath.Join(f.root, "nowhere"), "main", ErrCloneFailed},
		{"bad url", "https://invalid.invalid/x.git", "main", ErrCloneFailed},
		{"ext transport refused", "ext::sh -c touch% /tmp/pwned", "main", ErrCloneFailed},
	}
	for i, tt := range tests {
		dir := filepath.Join(f.root, "clone", string(rune('a'+i)))
		err := f.g.Clone(ctx, tt.src, dir, tt.base)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: Clone = %v, want %v", tt.name, err, tt.want)
		}
		if _, statErr := os.Stat(dir); statErr == nil {
			t.Errorf("%s: %s left behind", tt.name, dir)
		}
		if err != nil && strings.Contains(err.Error(), "goroutine") {
			t.Errorf("%s: error text has a stack: %v", tt.name, err)
		}
	}
	if err := f.g.Clone(ctx, f.origin, "relative/dir", "main"); !errors.Is(err, ErrInvalid) {
		t.Errorf("relative dir: %v", err)
	}
}

// TestCloneHostPath clones a non-bare repository on the host, with commits
// of its own that are on no remote.
func TestCloneHostPath(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	seed := filepath.Join(f.root, "seed")
	writeFile(t, seed, "local.txt", "only here\n")
	id := commitAll(t, seed, "local commit")
	dir := filepath.Join(f.root, "fromhost")
	if err := f.g.Clone(t.Context(), seed, dir, "main"); err != nil {
		t.Fatal(err)
	}
	if got := gitT(t, dir, "rev-parse", "refs/heads/main"); got != id {
		t.Errorf("base = %s, want the host repo's %s", got, id)
	}
	if readFile(t, dir, "local.txt") != "only here\n" {
		t.Error("local.txt missing")
	}
	if st := gitT(t, seed, "status", "--porcelain"); st != "" {
		t.Errorf("source changed: %q", st)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := t.Context()
	if err := f.g.Check(ctx, f.main, "nope"); !errors.Is(err, ErrBaseMissing) {
		t.Errorf("missing base: %v", err)
	}
	if err := f.g.Check(ctx, t.TempDir(), "main"); !errors.Is(err, ErrNotRepo) {
		t.Errorf("plain dir: %v", err)
	}
	// The seed has main checked out: landing there would change its files.
	if err := f.g.Check(ctx, filepath.Join(f.root, "seed"), "main"); !errors.Is(err, ErrBaseCheckedOut) {
		t.Errorf("base checked out: %v", err)
	}
}

func TestIsRepo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	tests := []struct {
		dir  string
		want bool
	}{
		{f.main, true},
		{filepath.Join(f.root, "seed"), true},
		{filepath.Join(f.main, "src"), false},
		{t.TempDir(), false},
		{filepath.Join(f.root, "missing"), false},
		{f.origin, false}, // bare: no working tree
	}
	for _, tt := range tests {
		got, err := f.g.IsRepo(t.Context(), tt.dir)
		if err != nil || got != tt.want {
			t.Errorf("IsRepo(%s) = %v, %v; want %v", tt.dir, got, err, tt.want)
		}
	}
}

// TestDefaultBranch: a source's HEAD names its default branch.
func TestDefaultBranchOfSource(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	for _, args := range [][]string{{"init", "-q", "-b", "trunk", src}, {"-C", src, "-c", "user.name=t", "-c", "user.email=t@x.test", "commit", "-q", "--allow-empty", "-m", "first"}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	g := New(Options{})
	if b, err := g.DefaultBranch(t.Context(), src); err != nil || b != "trunk" {
		t.Fatalf("DefaultBranch = %q, %v", b, err)
	}
	if _, err := g.DefaultBranch(t.Context(), filepath.Join(dir, "nope")); !errors.Is(err, ErrCloneFailed) {
		t.Fatalf("a missing source: %v", err)
	}
}
