package workspace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// testEnv is the environment of the tests' own git calls (setting up
// origins, looking at results): no user config, a fixed identity, and
// trust in repositories of another user (the agent's clones).
func testEnv() []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "GIT_") })
	return append(env,
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0",
		"GIT_AUTHOR_NAME=Tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=Tester", "GIT_COMMITTER_EMAIL=tester@example.com",
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
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

// gitTry runs git in dir for the test and returns its error.
func gitTry(dir string, args ...string) error {
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, testEnv()
	return cmd.Run()
}

// writeFile writes content to dir/rel, creating directories, all owned
// by dir's owner (a chat clone of the agent's user stays the agent's, as
// if the agent had written it).
func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) == os.Geteuid() {
		return
	}
	for q := p; q != dir && strings.HasPrefix(q, dir); q = filepath.Dir(q) {
		if err := os.Lchown(q, int(st.Uid), int(st.Gid)); err != nil {
			t.Fatal(err)
		}
	}
}

// gitChat runs git in a chat's clone for the test, as the chat's agent
// does (through f.agent), and returns its trimmed stdout.
func (f *fixture) gitChat(dir string, args ...string) string {
	f.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir, cmd.Env = dir, testEnv()
	if f.asIs != nil {
		f.asIs(cmd)
		cmd.Env = append(cmd.Env, "HOME="+f.root)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		f.t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
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
	origin string          // bare
	main   string          // the main clone
	agent  func(*exec.Cmd) // the chats' Agent hook; nil runs them as the bot
	asIs   func(*exec.Cmd) // the agent's user switch alone, for the test's own git (gitChat)
}

// seedFiles are the files of the origin's first commit.
var seedFiles = map[string]string{
	"README.md":  "# demo\n",
	"src/app.go": "package app\n\nfunc A() int { return 1 }\n",
	"src/lib.go": "package app\n\nfunc B() int { return 2 }\n",
	".gitignore": ".env\nlocal/\n*.key\n",
}

// testRoot is a new directory the agent's user may traverse (t.TempDir's
// parent is 0700), removed at the end of the test.
func testRoot(t testing.TB) string {
	t.Helper()
	root, err := os.MkdirTemp("", "threadline-workspace-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	return root
}

// newFixture makes a project with opt's runner; chats run as the bot.
func newFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	root := testRoot(t)
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

// agentUser is the uid and gid of the agent's user, threadline-agent,
// created when missing; the test is skipped unless it runs as root.
func agentUser(t testing.TB) (uid, gid uint32) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run git as the agent's user")
	}
	u, err := user.Lookup("threadline-agent")
	if err != nil {
		out, err := exec.Command("useradd", "--system", "--create-home", "--home-dir", "/var/lib/threadline-agent", "threadline-agent").CombinedOutput()
		if err != nil {
			t.Skipf("cannot create the agent's user: %v: %s", err, out)
		}
		if u, err = user.Lookup("threadline-agent"); err != nil {
			t.Fatal(err)
		}
	}
	uidN, _ := strconv.Atoi(u.Uid)
	gidN, _ := strconv.Atoi(u.Gid)
	return uint32(uidN), uint32(gidN)
}

// asUser is an Agent hook that runs commands as uid:gid (no other groups).
func asUser(uid, gid uint32) func(*exec.Cmd) {
	return func(cmd *exec.Cmd) {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	}
}

// newAgentFixture makes a project whose chats run as the agent's user: the
// Agent hook switches to it and MakeDir gives the chats' directories to
// it. opt's other settings are kept.
func newAgentFixture(t *testing.T, opt Options) *fixture {
	t.Helper()
	uid, gid := agentUser(t)
	opt.RequireAgent = true
	opt.MakeDir = func(_ context.Context, dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.Chown(dir, int(uid), int(gid))
	}
	f := newFixture(t, opt)
	f.agent = asUser(uid, gid)
	f.asIs = f.agent
	if err := os.MkdirAll(filepath.Join(f.root, "trees"), 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// create makes the clone of a chat named name.
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
	return Worktree{Main: f.main, Dir: filepath.Join(f.root, "trees", name), Branch: "threadline/" + name, Base: "main", Agent: f.agent}
}

// sameChat tells whether a and b are the same chat (Agent aside).
func sameChat(a, b Worktree) bool {
	return a.Main == b.Main && a.Dir == b.Dir && a.Branch == b.Branch && a.Base == b.Base
}

// importAll imports wt's branch into the main clone.
func (f *fixture) importAll(wt Worktree) string {
	f.t.Helper()
	head, err := f.g.Import(f.t.Context(), wt)
	if err != nil {
		f.t.Fatal(err)
	}
	return head
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

// assertMainUntouched checks that the main clone's status is empty, its
// files are the seed's and its HEAD is detached at the first commit.
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
	if head := gitT(f.t, f.main, "rev-parse", "--abbrev-ref", "HEAD"); head != "HEAD" {
		f.t.Errorf("main clone HEAD is %q, want detached", head)
	}
	if head, first := gitT(f.t, f.main, "rev-parse", "HEAD"), gitT(f.t, f.origin, "rev-list", "--max-parents=0", "main"); head != first {
		f.t.Errorf("main clone HEAD moved to %s", head)
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
