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
// data directory (database, work/, agents/) 0700 plus other's search bit
// when agents run as another user (traverse) or it had it already: they
// pass through it to their working directories and state without listing
// it, and everything in it is private to the bot on its own.
func PrivateDirs(traverse bool) error {
	data, err := DataDir()
	if err != nil {
		return err
	}
	state, err := StateDir()
	if err != nil {
		return err
	}
	if err := privateDir(data, traverse, true); err != nil {
		return err
	}
	return privateDir(state, false, false)
}

// privateDir creates d (0700) or takes group and other permissions from
// it, but for other's search bit when traverse, or when keepSearch and d
// has it.
func privateDir(d string, traverse, keepSearch bool) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", d, err)
	}
	fi, err := os.Stat(d)
	if err != nil {
		return err
	}
	want := os.FileMode(0o700)
	if traverse || keepSearch && fi.Mode().Perm()&0o001 != 0 {
		want |= 0o001
	}
	if fi.Mode().Perm() != want {
		if err := os.Chmod(d, want); err != nil {
			return fmt.Errorf("make %s private: %w", d, err)
		}
	}
	return nil
}
