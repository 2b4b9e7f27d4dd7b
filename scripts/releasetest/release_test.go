package releasetest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const version = "v0.0.0-releasetest"

var commands = []string{"threadline", "threadline-sandbox", "threadline-mcp"}

// shared is the release the tests share, built by the first that needs it
// into a directory TestMain removes.
var shared struct {
	once sync.Once
	dir  string
	err  string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedRelease is the release of the work tree the tests share.
func sharedRelease(t *testing.T) string {
	t.Helper()
	shared.once.Do(func() {
		dir, err := os.MkdirTemp("", "releasetest")
		if err != nil {
			shared.err = err.Error()
			return
		}
		shared.dir = dir
		start := time.Now()
		shared.err = runRelease(dir)
		t.Logf("release.sh: %v", time.Since(start).Round(time.Second))
	})
	if shared.err != "" {
		t.Fatal(shared.err)
	}
	return shared.dir
}

// release runs scripts/release.sh for linux/amd64 into a new directory.
func release(t *testing.T) string {
	t.Helper()
	out := t.TempDir()
	if err := runRelease(out); err != "" {
		t.Fatal(err)
	}
	return out
}

// runRelease runs scripts/release.sh for linux/amd64 into out; it returns
// what went wrong, if anything.
func runRelease(out string) string {
	cmd := exec.Command("bash", "../release.sh", version, out)
	cmd.Env = append(os.Environ(), "THREADLINE_RELEASE_PLATFORMS=linux/amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("release.sh: %v\n%s", err, b)
	}
	return ""
}

// treeState is HEAD and the work tree's changes: a release is reproducible
// only while they stay the same.
func treeState(t *testing.T) string {
	b, err := exec.Command("git", "-C", "../..", "status", "--porcelain=v2", "--branch", "--untracked-files=all").Output()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("release.sh runs on Linux")
	}
	before := treeState(t)
	out := sharedRelease(t)
	name := "threadline_" + version + "_linux_amd64"
	archive, sbom := name+".tar.gz", name+".sbom.cdx.json"

	var got []string
	entries, _ := os.ReadDir(out)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if want := []string{"SHA256SUMS", sbom, archive}; !slices.Equal(got, want) {
		t.Fatalf("release.sh wrote %q, want %q", got, want)
	}
	checkSums(t, out, archive, sbom)
	bins := checkArchive(t, filepath.Join(out, archive), name)
	for _, c := range commands {
		checkStatic(t, filepath.Join(bins, c))
	}
	v, err := exec.Command(filepath.Join(bins, "threadline"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "threadline "+version+" ") {
		t.Errorf("threadline version: %q, %v; want threadline %s ...", v, err, version)
	}
	checkSBOM(t, filepath.Join(out, sbom), bins)

	// The same tree again: byte for byte the same (unless someone changed
	// the shared work tree meanwhile). -short leaves it out.
	if testing.Short() {
		t.Log("-short: reproducibility not checked")
		return
	}
	again := release(t)
	if treeState(t) != before {
		t.Log("the work tree changed during the test: reproducibility not checked")
		return
	}
	for _, f := range []string{"SHA256SUMS", archive, sbom} {
		a, _ := os.ReadFile(filepath.Join(out, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two builds of the same tree", f)
		}
	}
}

// checkSums: SHA256SUMS lists the archive and the SBOM, with their sums.
func checkSums(t *testing.T, dir string, files ...string) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(sums)), "\n")
	if len(lines) != len(files) {
		t.Fatalf("SHA256SUMS:\n%s\nwant a line for each of %q", sums, files)
	}
	for i, f := range files {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if want := hex.EncodeToString(sum[:]) + "  " + f; lines[i] != want {
			t.Errorf("SHA256SUMS line %d: %q, want %q", i+1, lines[i], want)
		}
	}
}

// checkArchive checks the archive's entries (sorted, owned by 0:0, dated
// at the commit, the right modes) and unpacks its binaries; it returns
// their directory.
func checkArchive(t *testing.T, path, name string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header has a time %v or a name %q", zr.ModTime, zr.Name)
	}
	ct, err := exec.Command("git", "-C", "../..", "log", "-1", "--format=%ct").Output()
	if err != nil {
		t.Fatal(err)
	}
	epoch, _ := strconv.ParseInt(strings.TrimSpace(string(ct)), 10, 64)
	dir := t.TempDir()
	var names []string
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != epoch {
			t.Errorf("%s: owner %d:%d, time %v; want 0:0 and the commit's time %v", h.Name, h.Uid, h.Gid, h.ModTime, time.Unix(epoch, 0))
		}
		base := strings.TrimPrefix(h.Name, name+"/")
		wantMode := int64(0o644)
		if base == "" || slices.Contains(commands, base) {
			wantMode = 0o755
		}
		if h.Mode&0o7777 != wantMode {
			t.Errorf("%s: mode %o, want %o", h.Name, h.Mode, wantMode)
		}
		if slices.Contains(commands, base) {
			w, err := os.OpenFile(filepath.Join(dir, base), os.O_CREATE|os.O_WRONLY, 0o755)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.Copy(w, tr); err != nil {
				t.Fatal(err)
			}
			w.Close()
		}
	}
	want := []string{name + "/", name + "/LICENSE", name + "/README.md", name + "/threadline", name + "/threadline-mcp", name + "/threadline-sandbox"}
	if !slices.Equal(names, want) {
		t.Errorf("archive entries %q, want %q (sorted)", names, want)
	}
	return dir
}

// checkStatic: an ELF for linux/amd64 with no interpreter and no shared
// library.
func checkStatic(t *testing.T, path string) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_X86_64 {
		t.Errorf("%s: machine %v", path, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("%s is not static: it has %v", filepath.Base(path), p.Type)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs %q", filepath.Base(path), libs)
	}
}

// checkSBOM: a CycloneDX SBOM of the archive, threadline its main
// component, the other two binaries among its components, and every module
// any binary links named at the version go.mod requires.
func checkSBOM(t *testing.T, path, bins string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type component struct {
		BOMRef  string `json:"bom-ref"`
		Type    string `json:"type"`
		Name    string `json:"name"`
		Version string `json:"version"`
		PURL    string `json:"purl"`
	}
	var bom struct {
		BOMFormat   string `json:"bomFormat"`
		SpecVersion string `json:"specVersion"`
		Metadata    struct {
			Component component `json:"component"`
		} `json:"metadata"`
		Components   []component `json:"components"`
		Dependencies []struct {
			Ref string `json:"ref"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatal(err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion == "" {
		t.Fatalf("not a CycloneDX SBOM: %q %q", bom.BOMFormat, bom.SpecVersion)
	}
	main := bom.Metadata.Component
	if main.Version != version || !strings.HasSuffix(main.BOMRef, "#cmd/threadline") {
		t.Errorf("main component %+v, want threadline at %s", main, version)
	}
	named := map[string]string{} // module path: version
	var apps []string
	for _, c := range append(bom.Components, main) {
		if !strings.Contains(c.PURL, "goarch=amd64&goos=linux") {
			t.Errorf("%s: package URL %q does not name linux/amd64", c.Name, c.PURL)
		}
	}
	for _, c := range bom.Components {
		if c.Type == "application" {
			apps = append(apps, c.BOMRef[strings.Index(c.BOMRef, "#")+1:])
			continue
		}
		named[c.Name] = c.Version
	}
	if slices.Sort(apps); !slices.Equal(apps, []string{"cmd/threadline-mcp", "cmd/threadline-sandbox"}) {
		t.Errorf("the SBOM's binaries besides threadline: %q", apps)
	}
	required := goModRequires(t)
	linked := map[string]bool{}
	for _, c := range commands {
		bi, err := buildinfo.ReadFile(filepath.Join(bins, c))
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range bi.Deps {
			linked[d.Path] = true
			if named[d.Path] != d.Version {
				t.Errorf("%s links %s %s; the SBOM names it at %q", c, d.Path, d.Version, named[d.Path])
			}
			if required[d.Path] != d.Version {
				t.Errorf("%s links %s %s; go.mod requires %q", c, d.Path, d.Version, required[d.Path])
			}
		}
	}
	for _, m := range []string{"github.com/slack-go/slack", "maunium.net/go/mautrix", "modernc.org/sqlite", "github.com/lib/pq",
		"github.com/modelcontextprotocol/go-sdk", "github.com/landlock-lsm/go-landlock"} {
		if named[m] == "" || named[m] != required[m] {
			t.Errorf("the SBOM names %s at %q; go.mod requires %q", m, named[m], required[m])
		}
	}
	var unlinked []string
	for m := range required {
		if !linked[m] {
			unlinked = append(unlinked, m)
		}
	}
	slices.Sort(unlinked)
	t.Logf("the SBOM names %d modules; go.mod's %d not in any binary (tests, tools): %s", len(named), len(unlinked), strings.Join(unlinked, " "))
}

// goModRequires is go.mod's require lines: module path to version.
func goModRequires(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	req := map[string]string{}
	re := regexp.MustCompile(`(?m)^(?:require\s+|\t)([^\s()]+)\s+(v[^\s]+)`)
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		req[m[1]] = m[2]
	}
	if len(req) < 10 {
		t.Fatalf("read only %d requirements from go.mod", len(req))
	}
	return req
}

// TestImage builds the container image of the release with
// scripts/build-image.sh (which checks threadline version inside it); it
// needs buildah (apt-get install buildah) and is skipped without it.
func TestImage(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the test's release is linux/amd64")
	}
	if _, err := exec.LookPath("buildah"); err != nil {
		if os.Getenv("CI") == "true" || os.Getenv("THREADLINE_E2E") == "1" {
			t.Fatal("buildah is not installed (apt-get install buildah): the image is not built")
		}
		t.Skip("buildah is not installed (apt-get install buildah): the image is not built")
	}
	rel := sharedRelease(t)
	image := "localhost/threadline-releasetest:" + version
	cmd := exec.Command("bash", "../build-image.sh", version, rel)
	cmd.Env = append(os.Environ(), "THREADLINE_IMAGE="+image)
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() { _ = exec.Command("buildah", "rmi", image).Run() })
	if err != nil {
		t.Fatalf("build-image.sh: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "threadline "+version+" ") {
		t.Errorf("build-image.sh: %s", out)
	}
	cfg, err := exec.Command("buildah", "inspect", "--format", "{{.OCIv1.Config.User}} {{.OCIv1.Config.Cmd}}", image).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.TrimSpace(string(cfg)), "10001:10001 [serve --config /etc/threadline/config.yaml]"; got != want {
		t.Errorf("image config %q, want %q", got, want)
	}
}
