// Where the bot keeps its files: the data and state directories, the chats'
// working directories and the relays' journals.

package configs

import (
	"fmt"
	"os"
	"path/filepath"
)

// StateDir is $XDG_STATE_HOME/threadline (default ~/.local/state/threadline).
func StateDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the state directory: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "threadline"), nil
}

// RelayDir is $THREADLINE_RELAY_DIR, else $XDG_STATE_HOME/threadline/relays
// (default ~/.local/state/threadline/relays).
func RelayDir() string {
	if d := os.Getenv("THREADLINE_RELAY_DIR"); d != "" {
		return d
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "threadline", "relays")
}

// WorkRoot is the parent of the chats' own working directories: the
// config's workdir, else <data dir>/work (as the front desk uses).
func (c *Config) WorkRoot() string {
	if c.Workdir != "" {
		return c.Workdir
	}
	dir, err := DataDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "work")
}

// PrivateDirs makes the bot's own data and state directories (the
// database, the relays' journals) mode 0700 whatever the umask: it creates
// them so, and takes group and other permissions away from existing ones,
// except other's search bit on the data directory, which isolated agents
// use to reach their working directories below it.
func PrivateDirs() error {
	for _, dir := range []struct {
		path     func() (string, error)
		keepExec bool
	}{{DataDir, true}, {StateDir, false}} {
		d, err := dir.path()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		mode, want := fi.Mode().Perm(), os.FileMode(0o700)
		if dir.keepExec {
			want |= fi.Mode().Perm() & 0o001
		}
		if mode != want {
			if err := os.Chmod(d, want); err != nil {
				return fmt.Errorf("make %s private: %w", d, err)
			}
		}
	}
	return nil
}
