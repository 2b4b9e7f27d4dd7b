// home.go: the environment that keeps a CLI's state under one home directory.

package procrun

import "path/filepath"

// HomeEnv is the environment that confines a CLI's state to home: HOME and
// the XDG base directories under it, and loopback exempted from any proxy
// (a CLI pointed at a local endpoint must not send it through one).
func HomeEnv(home string) map[string]string {
	return map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, ".config"),
		"XDG_DATA_HOME":   filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME":  filepath.Join(home, ".cache"),
		"XDG_STATE_HOME":  filepath.Join(home, ".local", "state"),
		"NO_PROXY":        "127.0.0.1,localhost",
		"no_proxy":        "127.0.0.1,localhost",
	}
}
