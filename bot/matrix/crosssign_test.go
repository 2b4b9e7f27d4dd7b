package matrix

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestRecoveryKeyFile: the key file is created 0600 (and its directory),
// never overwritten, read back trimmed; a missing file is not an error, an
// empty one is.
func TestRecoveryKeyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "matrix-recovery-key")
	if _, ok, err := readRecoveryKey(path); ok || err != nil {
		t.Fatalf("missing file: ok %v, err %v", ok, err)
	}
	if err := writeRecoveryKey(path, "EsTc 1234"); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || looseMode(path) {
		t.Fatalf("mode %v, %v", st.Mode().Perm(), err)
	}
	if err := writeRecoveryKey(path, "another"); !errors.Is(err, ErrCrossSigning) {
		t.Errorf("overwrite: %v, want ErrCrossSigning", err)
	}
	if k, ok, err := readRecoveryKey(path); k != "EsTc 1234" || !ok || err != nil {
		t.Errorf("read %q %v %v", k, ok, err)
	}
	if err := os.WriteFile(path, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if !looseMode(path) {
		t.Error("0644 not reported as loose")
	}
	if _, _, err := readRecoveryKey(path); !errors.Is(err, ErrCrossSigning) {
		t.Errorf("empty file: %v, want ErrCrossSigning", err)
	}
}
