package workspace

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// sides records the commands each side ran: the bot's (Options.Cmd) and
// the agent's (the chats' Agent hook), to check that they never mix.
type sides struct {
	mu         sync.Mutex
	bot, agent []*exec.Cmd
}

// newSidesFixture is newAgentFixture recording both sides' commands.
func newSidesFixture(t *testing.T) (*fixture, *sides) {
	t.Helper()
	s := &sides{}
	f := newAgentFixture(t, Options{Cmd: func(cmd *exec.Cmd) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.bot = append(s.bot, cmd)
	}})
	agent := f.agent
	f.agent = func(cmd *exec.Cmd) {
		agent(cmd)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.agent = append(s.agent, cmd)
	}
	t.Cleanup(func() { s.check(t, f) })
	return f, s
}

// check: every bot command ran in the main clone (or, for Clone, nowhere)
// with no git directory, work tree or object directory of a chat in its
// environment and as the bot; every agent command ran in a clone under
// trees/ as the agent's user, with nothing of the bot's environment but
// PATH.
func (s *sides) check(t *testing.T, f *fixture) {
	s.mu.Lock()
	defer s.mu.Unlock()
	trees := filepath.Join(f.root, "trees") + string(filepath.Separator)
	if len(s.bot) == 0 || len(s.agent) == 0 {
		t.Errorf("commands: %d of the bot, %d of the agent", len(s.bot), len(s.agent))
	}
	for _, cmd := range s.bot {
		if cmd.Dir != "" && cmd.Dir != f.main || cmd.SysProcAttr != nil && cmd.SysProcAttr.Credential != nil {
			t.Errorf("the bot ran %q in %q (as %+v)", cmd.Args, cmd.Dir, cmd.SysProcAttr)
		}
		for _, kv := range cmd.Env {
			if strings.Contains(kv, trees) || strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_WORK_TREE=") ||
				strings.HasPrefix(kv, "GIT_ALTERNATE_OBJECT_DIRECTORIES=") {
				t.Errorf("the bot ran %q with %s", cmd.Args, kv)
			}
		}
	}
	for _, cmd := range s.agent {
		if !strings.HasPrefix(cmd.Dir, trees) || cmd.SysProcAttr == nil || cmd.SysProcAttr.Credential == nil || cmd.SysProcAttr.Credential.Uid == 0 {
			t.Errorf("the agent ran %q in %q (as %+v)", cmd.Args, cmd.Dir, cmd.SysProcAttr)
		}
		for _, kv := range cmd.Env {
			if k, _, _ := strings.Cut(kv, "="); k == "HOME" || k == "USER" || k == "SSH_AUTH_SOCK" || k == "THREADLINE_TEST_SECRET" {
				t.Errorf("the agent's %q got the bot's %s", cmd.Args, k)
			}
		}
	}
}

// TestAgentUser: with Agent switching to the agent's user, a chat's clone
// is owned by that user, who can git add and commit in it but cannot
// write the main clone; Import brings its commit into the main clone's
// own store.
func TestAgentUser(t *testing.T) {
	t.Parallel()
	f, _ := newSidesFixture(t)
	uid, gid := agentUser(t)
	ctx := t.Context()
	wt := f.create("a")
	for _, rel := range []string{"", ".git", ".git/config", ".git/objects", "README.md", "src"} {
		fi, err := os.Lstat(filepath.Join(wt.Dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid || st.Gid != gid {
			t.Errorf("%s/%s is owned by %d:%d, want the agent's %d:%d", wt.Dir, rel, st.Uid, st.Gid, uid, gid)
		}
	}

	// The agent's own git works in its clone.
	writeFile(t, wt.Dir, "src/agent.go", "package app // by the agent\n")
	f.gitChat(wt.Dir, "add", "src/agent.go")
	f.gitChat(wt.Dir, "commit", "-q", "-m", "the agent's commit")
	head := f.gitChat(wt.Dir, "rev-parse", "HEAD")

	// It cannot write the main clone: objects, refs, config, files.
	mainGit := filepath.Join(f.main, ".git")
	for _, p := range []string{
		filepath.Join(mainGit, "objects", "evil"),
		filepath.Join(mainGit, "refs", "heads", "evil"),
		filepath.Join(mainGit, "evil"),
		filepath.Join(f.main, "evil"),
	} {
		if err := runAs(uid, gid, "/bin/sh", "-c", "echo x > '"+p+"'"); err == nil || fileExists(p) {
			t.Errorf("the agent wrote %s", p)
		}
	}
	if err := runAs(uid, gid, "/bin/sh", "-c", "echo x >> '"+filepath.Join(mainGit, "config")+"'"); err == nil {
		t.Error("the agent appended to the main clone's config")
	}
	cmd := exec.Command("git", "update-ref", "refs/heads/main", head)
	cmd.Dir, cmd.Env = f.main, testEnv()
	f.asIs(cmd)
	if err := cmd.Run(); err == nil {
		t.Error("the agent moved the main clone's base")
	}
	if err := runAs(uid, gid, "/bin/ls", filepath.Join(mainGit, "threadline", "clones")); err == nil {
		t.Error("the agent can read the bot's registry")
	}
	// Its own git fetch from the main clone (its origin) works, its push
	// to it does not.
	f.gitChat(wt.Dir, "fetch", "-q", "origin")
	cmd = exec.Command("git", "push", "-q", "origin", "HEAD:refs/heads/evil")
	cmd.Dir, cmd.Env = wt.Dir, append(testEnv(), "HOME="+f.root)
	f.asIs(cmd)
	if out, err := cmd.CombinedOutput(); err == nil || gitTry(f.main, "rev-parse", "--verify", "-q", "refs/heads/evil") == nil {
		t.Errorf("the agent pushed into the main clone: %s", out)
	}

	got, err := f.g.Import(ctx, wt)
	if err != nil || got != head {
		t.Fatalf("Import = %s, %v; want %s", got, err, head)
	}
	if fileExists(filepath.Join(mainGit, "objects", "info", "alternates")) {
		t.Error("the main clone borrows objects")
	}
	gitT(t, f.main, "cat-file", "-e", head+":src/agent.go")
	if gitT(t, f.main, "rev-parse", "refs/heads/"+wt.Branch) != head {
		t.Error("main's branch of the chat is not the imported head")
	}
	if again, err := f.g.Import(ctx, wt); err != nil || again != head {
		t.Errorf("Import again = %s, %v", again, err)
	}
	f.assertMainUntouched()
}

// runAs runs a program as uid:gid and returns its error.
func runAs(uid, gid uint32, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	asUser(uid, gid)(cmd)
	return cmd.Run()
}

// TestAsAgent runs the flows of the other tests with every chat's git run
// as the agent's user, and checks that the two sides never mixed.
func TestAsAgent(t *testing.T) {
	t.Parallel()
	agentUser(t)
	for _, tt := range []struct {
		name string
		run  func(*testing.T, *fixture)
	}{
		{"isolated", testChatsIsolated},
		{"fork", testFork},
		{"merge", testMerge},
		{"conflict", testMergeConflict},
		{"push", testPushNotFastForward},
		{"concurrent", testConcurrentChats},
		{"spares", testConcurrentSpares},
		{"include", func(t *testing.T, f *fixture) {
			uid, _ := agentUser(t)
			for _, wt := range testInclude(t, f) {
				for _, rel := range []string{".env", "local", "local/dev.conf", "local/link.conf"} {
					fi, err := os.Lstat(filepath.Join(wt.Dir, rel))
					if err != nil {
						continue // b gets .env only
					}
					if st := fi.Sys().(*syscall.Stat_t); st.Uid != uid {
						t.Errorf("included %s is owned by %d, not the agent's user", rel, st.Uid)
					}
				}
			}
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := newSidesFixture(t)
			tt.run(t, f)
		})
	}
}

// TestMaliciousChatConfig: a chat's clone configured to run programs
// (filters, textconv, an external diff, fsmonitor, hooks, ssh, upload-pack,
// credential helper, pager, editor, signing), with attributes that name
// them committed and imported: across Snapshot, Stat, BranchDiff, Commit,
// Import, ShipDiff, Push, Merge, Unpushed and Remove, whatever ran, ran as
// the agent's user, never as the bot; a clean filter did run on the
// agent's side (the test is live); the main clone's configuration is
// unchanged.
func TestMaliciousChatConfig(t *testing.T) {
	t.Parallel()
	f, _ := newSidesFixture(t)
	uid, _ := agentUser(t)
	ctx := t.Context()
	mainConfig := readFile(t, f.main, ".git/config")

	evil := filepath.Join(f.root, "evil")
	marker := filepath.Join(f.root, "ran")
	if err := os.WriteFile(marker, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(marker, 0o666); err != nil {
		t.Fatal(err)
	}
	program := func(name, tail string) string {
		p := filepath.Join(evil, name)
		writeFile(t, evil, name, "#!/bin/sh\necho \"$(id -u) "+name+"\" >> "+marker+"\n"+tail)
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	hooks := filepath.Join(evil, "hooks")
	for _, h := range []string{"pre-commit", "post-commit", "commit-msg", "prepare-commit-msg", "post-checkout",
		"post-rewrite", "pre-rebase", "reference-transaction", "pre-push", "post-merge", "pre-auto-gc", "post-index-change"} {
		program("hooks/"+h, "exit 0\n")
	}
	wt := f.create("a")
	for _, kv := range [][2]string{
		{"filter.evil.clean", program("clean", "cat\n")},
		{"filter.evil.smudge", program("smudge", "cat\n")},
		{"diff.evil.textconv", program("textconv", "cat \"$1\"\n")},
		{"diff.external", program("external", "exit 0\n")},
		{"core.fsmonitor", program("fsmonitor", "exit 1\n")},
		{"core.hooksPath", hooks},
		{"core.sshCommand", program("ssh", "exit 1\n")},
		{"remote.origin.uploadpack", program("uploadpack", "exit 1\n")},
		{"remote.origin.receivepack", program("receivepack", "exit 1\n")},
		{"credential.helper", "!" + program("credential", "exit 0\n")},
		{"core.pager", program("pager", "cat\n")},
		{"core.editor", program("editor", "exit 0\n")},
		{"sequence.editor", program("seqeditor", "exit 0\n")},
		{"gpg.program", program("gpg", "exit 1\n")},
		{"commit.gpgSign", "true"},
		{"alias.status", "!" + program("alias", "exit 0\n")},
	} {
		f.gitChat(wt.Dir, "config", kv[0], kv[1])
	}
	writeFile(t, wt.Dir, ".gitattributes", "* filter=evil diff=evil\n")

	before, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, wt.Dir, "src/app.go", "package app // evil\n")
	after, err := f.g.Snapshot(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Stat(ctx, wt, before, after); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.g.BranchDiff(ctx, wt); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Commit(ctx, wt, CommitOptions{Message: "evil"}); err != nil {
		t.Fatal(err)
	}
	head, err := f.g.Import(ctx, wt)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.g.ShipDiff(ctx, wt, head); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Push(ctx, wt, PushOptions{Head: head}); err != nil {
		t.Fatal(err)
	}
	f.pushFromElsewhere("main", "other.txt", "moved\n") // the merge rebases
	if _, err := f.g.Merge(ctx, wt, MergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Unpushed(ctx, wt, ""); err != nil {
		t.Fatal(err)
	}
	child, err := f.g.Fork(ctx, wt, f.wt("child"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, child, RemoveOptions{Discard: true}); err != nil {
		t.Fatal(err)
	}
	if err := f.g.Remove(ctx, wt, RemoveOptions{}); err != nil {
		t.Fatal(err)
	}

	lines := strings.Split(strings.TrimSpace(readFile(t, f.root, "ran")), "\n")
	agent := strconv.Itoa(int(uid)) + " "
	var clean bool
	for _, line := range lines {
		if !strings.HasPrefix(line, agent) {
			t.Errorf("a program of the chat's ran as someone else than the agent: %q", line)
		}
		clean = clean || strings.HasSuffix(line, " clean")
	}
	t.Logf("ran: %q", lines)
	if !clean {
		t.Error("the clean filter never ran: the test proves nothing")
	}
	if got := readFile(t, f.main, ".git/config"); got != mainConfig {
		t.Errorf("the main clone's config changed:\n%s", got)
	}
	f.assertMainUntouched()
}

// TestImportFailures: a chat's side that names no commit, lacks an
// object, answers garbage, sends a broken pack or hangs makes Import fail
// in bounded time, with the main clone's branch of the chat unchanged and
// nothing of it in the main clone.
func TestImportFailures(t *testing.T) {
	t.Parallel()
	rec := t.TempDir()
	var mode struct {
		sync.Mutex
		name string
	}
	set := func(name string) {
		mode.Lock()
		defer mode.Unlock()
		mode.name = name
	}
	replace := func(cmd *exec.Cmd, script string) {
		cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", script}
	}
	f := newFixture(t, Options{Timeout: 3 * time.Second})
	f.agent = func(cmd *exec.Cmd) {
		mode.Lock()
		defer mode.Unlock()
		if len(cmd.Args) < 2 {
			return
		}
		switch {
		case mode.name == "liar" && cmd.Args[1] == "rev-parse":
			replace(cmd, "echo --output=/tmp/pwned")
		case mode.name == "garbage" && cmd.Args[1] == "pack-objects":
			replace(cmd, "echo PACK; head -c 4096 /dev/urandom")
		case mode.name == "hang" && cmd.Args[1] == "pack-objects":
			replace(cmd, "echo $$ > "+rec+"/helper.pid; sleep 600 & echo $! > "+rec+"/child.pid; wait")
		}
	}
	ctx := t.Context()
	wt := f.create("a")
	f.commitIn(wt, map[string]string{"a.txt": "a\n"})
	good := f.importAll(wt)
	head := f.commitIn(wt, map[string]string{"b.txt": "b\n"})
	blob := gitT(t, wt.Dir, "rev-parse", head+":b.txt")

	check := func(name string, want error) {
		t.Helper()
		start := time.Now()
		_, err := f.g.Import(ctx, wt)
		if !errors.Is(err, want) {
			t.Errorf("%s: Import = %v, want %v", name, err, want)
		}
		t.Logf("%s: %v (%v)", name, err, time.Since(start).Round(time.Millisecond))
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s: took %v", name, took)
		}
		if got := gitT(t, f.main, "rev-parse", "refs/heads/"+wt.Branch); got != good {
			t.Errorf("%s: main's branch moved to %s", name, got)
		}
		if gitTry(f.main, "cat-file", "-e", head) == nil && gitTry(f.main, "rev-list", "--objects", "--quiet", head) == nil {
			t.Errorf("%s: the head reached the main clone whole", name)
		}
	}

	set("liar")
	check("an answer that is not an object id", ErrImport)
	set("garbage")
	check("a broken pack", ErrImport)
	set("hang")
	check("a side that never answers", ErrTimeout)
	assertGone(t, rec)
	set("")

	// An object of the commit is missing from the chat's store.
	loose := filepath.Join(wt.Dir, ".git", "objects", blob[:2], blob[2:])
	if err := os.Rename(loose, loose+".away"); err != nil {
		t.Fatal(err)
	}
	check("a missing blob", ErrImport)
	if err := os.Rename(loose+".away", loose); err != nil {
		t.Fatal(err)
	}
	// The branch names a commit the chat does not have.
	writeFile(t, wt.Dir, ".git/refs/heads/"+wt.Branch, strings.Repeat("ab", 20)+"\n")
	check("a head the chat does not have", ErrImport)
	writeFile(t, wt.Dir, ".git/refs/heads/"+wt.Branch, head+"\n")
	if got, err := f.g.Import(ctx, wt); err != nil || got != head {
		t.Errorf("Import once repaired = %s, %v", got, err)
	}
	if fileExists("/tmp/pwned") {
		t.Error("the liar's answer was used as an option")
	}
}

// TestAgentEnv: the agent's side gets none of the bot's environment (but
// PATH) and not Options.Env.
func TestAgentEnv(t *testing.T) {
	t.Setenv("THREADLINE_TEST_SECRET", "s3cret")
	var mu sync.Mutex
	var envs [][]string
	f := newFixture(t, Options{Env: []string{"SSH_AUTH_SOCK=/run/bot.sock", "GIT_SSH_COMMAND=ssh -i /bot/key"}})
	f.agent = func(cmd *exec.Cmd) {
		mu.Lock()
		defer mu.Unlock()
		envs = append(envs, slices.Clone(cmd.Env))
	}
	wt := f.create("a")
	writeFile(t, wt.Dir, "a.txt", "a\n")
	if _, err := f.g.Commit(t.Context(), wt, CommitOptions{Message: "a"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(envs) == 0 {
		t.Fatal("the Agent hook saw nothing")
	}
	for _, env := range envs {
		for _, kv := range env {
			if strings.Contains(kv, "s3cret") || strings.Contains(kv, "bot.sock") || strings.Contains(kv, "/bot/key") || strings.HasPrefix(kv, "HOME=") {
				t.Errorf("the agent's side got %s", kv)
			}
		}
		if !slices.Contains(env, "GIT_CEILING_DIRECTORIES="+filepath.Join(f.root, "trees")) {
			t.Errorf("no ceiling above the clone: %q", env)
		}
	}
}
