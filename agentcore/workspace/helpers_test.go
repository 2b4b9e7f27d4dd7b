package workspace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// testEnv is the environment of the tests' own git calls (setting up
// origins, looking at results): no user config, a fixed identity.
func testEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
	return append(env,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com",
	)
}

// gitT runs git in dir for the test and returns its trimmed stdout.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, testEnv()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// writeFile writes content to dir/rel, creating directories.
func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readFile reads dir/rel ("" when it does not exist).
func readFile(t testing.TB, dir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, rel))
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// commitAll commits everything in dir as the tester.
func commitAll(t testing.TB, dir, msg string) string {
	t.Helper()
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "commit", "-q", "-m", msg)
	return gitT(t, dir, "rev-parse", "HEAD")
}

// fixture is a project: a bare origin with a main branch, its main clone,
// and a runner.
type fixture struct {
	t      *testing.T
	g      *Git
	root   string
	origin string // bare
	main   string // the main clone
}

// seedFiles are the files of the origin's first commit.
var seedFiles = map[string]string{
	"README.md":  "# demo\n",
	"src/app.go": "package app\n\nfunc A() int { return 1 }\n",
	"src/lib.go": "package app\n\nfunc B() int { return 2 }\n",
	".gitignore": ".env\nlocal/\n*.key\n",
}

// newFixture makes a project with opt's runner (Logger and Env kept).
func newFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	root := t.TempDir()
	seed := filepath.Join(root, "seed")
	gitT(t, root, "init", "-q", "-b", "main", seed)
	for rel, content := range seedFiles {
		writeFile(t, seed, rel, content)
	}
	commitAll(t, seed, "first")
	f := &fixture{t: t, g: New(opt), root: root, origin: filepath.Join(root, "origin.git"), main: filepath.Join(root, "main")}
	gitT(t, root, "clone", "-q", "--bare", seed, f.origin)
	if err := f.g.Clone(t.Context(), f.origin, f.main, "main"); err != nil {
		t.Fatal(err)
	}
	return f
}

// create makes the worktree of a chat named name.
func (f *fixture) create(name string) Worktree {
	f.t.Helper()
	wt, err := f.g.Create(f.t.Context(), f.wt(name))
	if err != nil {
		f.t.Fatal(err)
	}
	return wt
}

// wt is the Worktree of a chat named name, not made yet.
func (f *fixture) wt(name string) Worktree {
	return Worktree{Main: f.main, Dir: filepath.Join(f.root, "trees", name), Branch: "threadline/" + name, Base: "main"}
}

// pushFromElsewhere commits content to rel on origin's branch from a
// separate clone, as someone else would.
func (f *fixture) pushFromElsewhere(branch, rel, content string) string {
	f.t.Helper()
	other := filepath.Join(f.t.TempDir(), "other")
	gitT(f.t, f.root, "clone", "-q", "--branch", branch, f.origin, other)
	writeFile(f.t, other, rel, content)
	id := commitAll(f.t, other, "elsewhere")
	gitT(f.t, other, "push", "-q", "origin", branch)
	return id
}

// assertMainUntouched checks that the main clone's status is empty and its
// files are the seed's.
func (f *fixture) assertMainUntouched() {
	f.t.Helper()
	if st := gitT(f.t, f.main, "status", "--porcelain"); st != "" {
		f.t.Errorf("main clone status: %q", st)
	}
	for rel, content := range seedFiles {
		if got := readFile(f.t, f.main, rel); got != content {
			f.t.Errorf("main clone %s = %q, want %q", rel, got, content)
		}
	}
}

// pidAlive tells whether pid runs (a zombie counts as gone).
func pidAlive(pid string) bool {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z") && !strings.HasPrefix(rest, "X")
}

// fakeHelper writes an executable script bin/name and returns bin.
func fakeHelper(t *testing.T, name, script string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// fileExists tells whether p exists.
func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// itoa is strconv.Itoa.
func itoa(n int) string { return strconv.Itoa(n) }
