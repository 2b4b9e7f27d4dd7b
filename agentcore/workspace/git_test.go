package workspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hangHelper is a remote helper that records its pid and its child's and
// waits on a long sleep: a transport that never answers.
func hangHelper(t *testing.T) (bin, rec string) {
	rec = t.TempDir()
	bin = fakeHelper(t, "git-remote-hang", `
echo $$ > `+rec+`/helper.pid
sleep 600 &
echo $! > `+rec+`/child.pid
wait
`)
	return bin, rec
}

// assertGone waits for the pids recorded in rec to end.
func assertGone(t *testing.T, rec string) {
	t.Helper()
	for _, name := range []string{"helper.pid", "child.pid"} {
		pid := strings.TrimSpace(readFile(t, rec, name))
		if pid == "" {
			t.Errorf("%s not recorded: the helper did not start", name)
			continue
		}
		deadline := time.Now().Add(5 * time.Second)
		for pidAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if pidAlive(pid) {
			t.Errorf("%s %s still runs after git was stopped", name, pid)
		}
	}
}

// TestTimeoutKillsGit: a push to a remote that hangs is stopped at the time
// limit with ErrTimeout, and git's children (the helper and its sleep) are
// gone too.
func TestTimeoutKillsGit(t *testing.T) {
	t.Parallel()
	bin, rec := hangHelper(t)
	f := newFixture(t, Options{
		Timeout: 2 * time.Second,
		Env:     []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
	})
	wt := f.create("a")
	f.importAll(wt)
	start := time.Now()
	err := f.g.Push(t.Context(), wt, PushOptions{Remote: "hang::nowhere"})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Push to a hanging remote = %v, want ErrTimeout", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("took %v", took)
	}
	if err.Error() != "git push: timed out and was stopped" {
		t.Errorf("error text %q", err)
	}
	assertGone(t, rec)
}

// TestCancelKillsGit: the caller's context ending stops git the same way.
func TestCancelKillsGit(t *testing.T) {
	t.Parallel()
	bin, rec := hangHelper(t)
	f := newFixture(t, Options{Env: []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}})
	wt := f.create("a")
	f.importAll(wt)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for !fileExists(filepath.Join(rec, "child.pid")) {
			time.Sleep(10 * time.Millisecond)
		}
		cancel()
	}()
	err := f.g.Push(ctx, wt, PushOptions{Remote: "hang::nowhere"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Push cancelled = %v, want context.Canceled", err)
	}
	assertGone(t, rec)
}

// TestBotGitEnvIgnored: GIT_* variables of the bot's own environment (a bot
// started from a git hook has GIT_DIR) do not reach git.
func TestBotGitEnvIgnored(t *testing.T) {
	t.Setenv("GIT_DIR", "/nonexistent")
	t.Setenv("GIT_INDEX_FILE", "/nonexistent/index")
	f := newFixture(t, Options{})
	wt := f.create("a")
	writeFile(t, wt.Dir, "x.txt", "x\n")
	if _, err := f.g.Commit(t.Context(), wt, CommitOptions{Message: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestGitErrors(t *testing.T) {
	t.Parallel()
	g := New(Options{})
	ctx := t.Context()
	_, err := g.bot(t.TempDir()).run(ctx, "status")
	var ge *GitError
	if !errors.Is(err, ErrNotRepo) || !errors.As(err, &ge) || ge.Code != 128 {
		t.Fatalf("status outside a repo = %v", err)
	}
	if !strings.HasPrefix(err.Error(), "git status failed: not a git repository (fatal: not a git repository") {
		t.Errorf("error text %q", err)
	}
	bad := New(Options{Git: "/nonexistent/git"})
	if _, err := bad.bot(t.TempDir()).run(ctx, "status"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing git = %v", err)
	}
	if got := summarize("hint: a\n\nerror: one\nfatal: two\nthree\nfour\n"); got != "fatal: two; three; four" {
		t.Errorf("summarize = %q", got)
	}
}

func TestTailBuffer(t *testing.T) {
	b := &tailBuffer{max: 5}
	b.Write([]byte("abc"))
	b.Write([]byte("defg"))
	if b.String() != "cdefg" {
		t.Errorf("tail %q", b.String())
	}
}

func TestRunSetup(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := RunSetup(t.Context(), Setup{Dir: dir, Args: []string{"/bin/sh", "-c", "pwd; echo oops >&2; exit 3"}})
	if err == nil || !strings.Contains(out, dir) || !strings.Contains(out, "oops") {
		t.Errorf("RunSetup = %q, %v", out, err)
	}
	rec := t.TempDir()
	start := time.Now()
	out, err = RunSetup(t.Context(), Setup{
		Dir:   dir,
		Args:  []string{"/bin/sh", "-c", "echo started; echo $$ > " + rec + "/helper.pid; sleep 600 & echo $! > " + rec + "/child.pid; wait"},
		Limit: 500 * time.Millisecond,
	})
	if !errors.Is(err, ErrTimeout) || !strings.Contains(out, "started") || time.Since(start) > 10*time.Second {
		t.Errorf("RunSetup past its limit = %q, %v", out, err)
	}
	assertGone(t, rec)
	if _, err := RunSetup(t.Context(), Setup{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty setup: %v", err)
	}
}

// TestLockedIndex: another git holding the clone's index is ErrLocked.
func TestLockedIndex(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	wt := f.create("a")
	writeFile(t, wt.Dir, ".git/index.lock", "")
	writeFile(t, wt.Dir, "x.txt", "x\n")
	if _, err := f.g.Commit(t.Context(), wt, CommitOptions{Message: "x"}); !errors.Is(err, ErrLocked) {
		t.Errorf("Commit with index.lock = %v, want ErrLocked", err)
	}
}

// TestOtherOwner: git refuses to work as the bot in a clone another user
// (the agent's) owns: a chat's Agent hook left nil by mistake fails with
// ErrUnsafeRepo instead of running as the bot. The bot's Options.Config
// (safe.directory=*) does not reach the chat's side.
func TestOtherOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to chown")
	}
	t.Parallel()
	f := newFixture(t, Options{Config: []string{"safe.directory=*"}})
	wt := f.create("a")
	if err := filepath.Walk(wt.Dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.g.Snapshot(t.Context(), wt); !errors.Is(err, ErrUnsafeRepo) {
		t.Errorf("Snapshot of another user's clone as the bot = %v, want ErrUnsafeRepo", err)
	}
	if _, err := f.g.Import(t.Context(), wt); !errors.Is(err, ErrUnsafeRepo) {
		t.Errorf("Import of another user's clone as the bot = %v, want ErrUnsafeRepo", err)
	}
	wt.Agent = asUser(65534, 65534)
	if _, err := f.g.Snapshot(t.Context(), wt); err != nil {
		t.Errorf("as its owner: %v", err)
	}
}
