// Native launch: the platform binary behind an npm wrapper that does not
// forward signals.

package acp

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// NpmNative names the platform binary that an npm package's JavaScript
// wrapper runs with spawnSync and no signal forwarding (codex-acp, copilot):
// a SIGTERM or SIGINT to such a wrapper leaves the binary running, so the
// provider launches the binary itself. Package is the platform package
// with "{platform}" for the npm platform ("linux-x64", "darwin-arm64", ...),
// Path the binary inside it, Wrapper the file name of the JS wrapper (the
// real path of the resolved executable).
type NpmNative struct {
	Wrapper string
	Package string
	Path    string
}

// npmPlatform is the npm name of this platform ("linux-x64").
func npmPlatform() string {
	goos, arch := runtime.GOOS, runtime.GOARCH
	if goos == "windows" {
		goos = "win32"
	}
	if arch == "amd64" {
		arch = "x64"
	}
	return goos + "-" + arch
}

// Resolve returns the platform binary for bin when bin is (a link to) the
// wrapper and the binary is installed where Node would find it (nested in
// the wrapper's package or hoisted beside it); otherwise bin unchanged (a
// native release on PATH, an operator's own wrapper).
func (n NpmNative) Resolve(bin string) string {
	path := bin
	if !strings.ContainsRune(bin, filepath.Separator) {
		if p, err := exec.LookPath(bin); err == nil {
			path = p
		}
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil || filepath.Base(real) != n.Wrapper {
		return bin
	}
	pkg := filepath.FromSlash(strings.ReplaceAll(n.Package, "{platform}", npmPlatform()))
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		p := filepath.Join(dir, "node_modules", pkg, filepath.FromSlash(n.Path))
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
		if dir == filepath.Dir(dir) {
			return bin
		}
	}
}
