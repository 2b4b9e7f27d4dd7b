// Plan on the real kernel: what a policy would enforce, and what it refuses,
// without restricting the test.

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// needLandlock skips t when the kernel cannot enforce a sandbox.
func needLandlock(t testing.TB) {
	t.Helper()
	if ok, why := Available(); !ok {
		t.Skipf("no sandbox on this kernel: %s", why)
	}
}

// TestPlan checks the Report on this kernel, skipped paths, and that Plan
// refuses what Apply refuses, without restricting the test.
func TestPlan(t *testing.T) {
	needLandlock(t)
	dir := t.TempDir()
	link := filepath.Join(dir, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	r, err := Plan(Policy{ReadWrite: []string{dir, missing}, ReadOnly: SystemReadOnly(), ConnectTCP: []uint16{443}, Scope: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	if r.ABI != ABI() || !r.ConnectTCP || !r.BindTCP {
		t.Errorf("report %v", r)
	}
	if want := ABI() >= 6; r.Scoped != want {
		t.Errorf("Scoped %t on ABI %d", r.Scoped, ABI())
	}
	if ABI() >= 5 && !strings.Contains(r.FS, "ioctl_dev") {
		t.Errorf("FS %q does not handle ioctl_dev on ABI %d", r.FS, ABI())
	}
	if len(r.Skipped) != 1 || !strings.HasPrefix(r.Skipped[0], missing+":") {
		t.Errorf("Skipped %q, want %s", r.Skipped, missing)
	}
	r, err = Plan(Policy{AnyBindTCP: true, BindTCP: []uint16{8080}})
	if err != nil || r.BindTCP || r.Scoped {
		t.Errorf("AnyBindTCP, no Scope: %v, %v", r, err)
	}
	if _, err := Plan(Policy{ReadWrite: []string{filepath.Join(link, "x")}}); !errors.Is(err, ErrSymlink) {
		t.Errorf("rw through a link: %v, want ErrSymlink", err)
	}
	if _, err := Plan(Policy{ReadOnly: []string{link}, Forbidden: []string{dir}}); !errors.Is(err, ErrOverlap) {
		t.Errorf("ro link to a forbidden dir: %v, want ErrOverlap", err)
	}
	if _, err := Plan(Policy{ReadWrite: []string{"/dev/null"}}); !errors.Is(err, ErrPolicy) {
		t.Errorf("rw device: %v, want ErrPolicy", err)
	}
}
