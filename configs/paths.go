// Where the bot keeps its files: the data and state directories, the chats'
// working directories and the relays' journals.

package configs

import (
	"fmt"
	"os"
	"path/filepath"
)

// SystemDir holds a root bot's files when no XDG variable names another
// place: its database, state, relays and the chats' working directories
// (work/). A root bot never uses its own home (/root) for them, so that
// giving the agent user a way to its working directory (search permission
// on the directories above it) never opens root's home.
const SystemDir = "/var/lib/threadline"

// StateDir is $XDG_STATE_HOME/threadline; by default SystemDir/state for
// root, else ~/.local/state/threadline.
func StateDir() (string, error) {
	if base := os.Getenv("XDG_STATE_HOME"); base != "" {
		return filepath.Join(base, "threadline"), nil
	}
	if os.Geteuid() == 0 {
		return filepath.Join(SystemDir, "state"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the state directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "threadline"), nil
}

// RelayDir is $THREADLINE_RELAY_DIR, else StateDir()/relays.
func RelayDir() string {
	if d := os.Getenv("THREADLINE_RELAY_DIR"); d != "" {
		return d
	}
	dir, _ := StateDir()
	return filepath.Join(dir, "relays")
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

// PrivateDirs makes the bot's own data and state directories private
// whatever the umask: the state directory (relays' journals) 0700, the
// data directory (database, work/) 0711, so that isolated agents may pass
// through it to their working directories below work/ without listing it;
// everything in it is private to the bot on its own.
func PrivateDirs() error {
	for _, dir := range []struct {
		path func() (string, error)
		mode os.FileMode
	}{{DataDir, 0o711}, {StateDir, 0o700}} {
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
		if fi.Mode().Perm() != dir.mode {
			if err := os.Chmod(d, dir.mode); err != nil {
				return fmt.Errorf("make %s private: %w", d, err)
			}
		}
	}
	return nil
}
