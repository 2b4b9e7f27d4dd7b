package configs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRootDefaultsOutsideHome: a root bot with no XDG variable keeps its
// data and state under SystemDir, never in root's home, and refuses to
// start over a database an earlier version left in the home.
func TestRootDefaultsOutsideHome(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("root's defaults")
	}
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("THREADLINE_RELAY_DIR", "")
	home := t.TempDir()
	t.Setenv("HOME", home)
	data, err := DataDir()
	if err != nil || data != SystemDir {
		t.Errorf("DataDir = %q, %v; want %s", data, err, SystemDir)
	}
	state, err := StateDir()
	if err != nil || state != filepath.Join(SystemDir, "state") {
		t.Errorf("StateDir = %q, %v", state, err)
	}
	if r := RelayDir(); r != filepath.Join(SystemDir, "state", "relays") {
		t.Errorf("RelayDir = %q", r)
	}
	old := filepath.Join(home, ".local", "share", "threadline")
	if err := os.MkdirAll(old, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(old, "threadline.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(SystemDir, "threadline.db")); err == nil {
		t.Skip(SystemDir + " holds a database on this machine")
	}
	err = movedRootData(SystemDir)
	if err == nil || !strings.Contains(err.Error(), "mv "+old+"/* "+SystemDir+"/") {
		t.Errorf("an old root database went unmentioned: %v", err)
	}
}
