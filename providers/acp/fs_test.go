// DirFS: the fs client methods confined to the run's directory.

package acp

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestDirFS(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	fs := DirFS{Root: root}
	if err := fs.WriteTextFile(filepath.Join(root, "a", "b.txt"), "1\n2\n3\n"); err != nil {
		t.Fatal(err)
	}
	if s, err := fs.ReadTextFile(filepath.Join(root, "a", "b.txt"), 2, 1); err != nil || s != "2\n" {
		t.Fatalf("read line 2: %q %v", s, err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(outside, "x"), filepath.Join(root, "..", "x"), filepath.Join(root, "escape", "x"), "rel/x"} {
		if err := fs.WriteTextFile(p, "x"); !errors.Is(err, ErrOutsideRoot) {
			t.Errorf("write %s: %v", p, err)
		}
	}
	if _, err := fs.ReadTextFile(filepath.Join(root, "missing"), 0, 0); fsErrorCode(err) != CodeResourceNotFound {
		t.Errorf("missing file: %v", err)
	}
	if err := (DirFS{Root: root, ReadOnly: true}).WriteTextFile(filepath.Join(root, "c"), "x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only: %v", err)
	}
}
