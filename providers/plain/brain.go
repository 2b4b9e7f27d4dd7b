// Antigravity session discovery: its brain directory before and after a run.

package plain

import (
	"os"
	"path/filepath"
	"strings"
)

// ValidSessionDir reports whether name can be an Antigravity session id: a
// plain directory name, no path elements, not hidden.
func ValidSessionDir(name string) bool {
	return name != "" && !strings.HasPrefix(name, ".") && !strings.ContainsAny(name, `/\`) &&
		!strings.Contains(name, "..") && filepath.Base(name) == name && len(name) <= 255
}

// snapshot lists the valid session directories in dir: real directories (not
// symlinks) with a valid name. A missing dir is an empty snapshot.
func snapshot(dir string) map[string]bool {
	out := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		if e.Type()&os.ModeSymlink != 0 || !e.IsDir() || !ValidSessionDir(e.Name()) {
			continue
		}
		out[e.Name()] = true
	}
	return out
}

// newSession returns the one directory in after that is not in before;
// zero or several new directories are ambiguous and return "".
func newSession(before, after map[string]bool) (string, int) {
	var found []string
	for name := range after {
		if !before[name] {
			found = append(found, name)
		}
	}
	if len(found) != 1 {
		return "", len(found)
	}
	return found[0], 1
}
