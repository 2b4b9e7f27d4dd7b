package worktrees_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/workspace"
	"github.com/threadline-bot/threadline/agentcore/worktrees"
)

// memStore is the store in memory, with the store's claim rule.
type memStore struct {
	mu   sync.Mutex
	recs map[string]worktrees.Record
}

func (s *memStore) ClaimWorkspace(_ context.Context, w worktrees.Record, stale time.Duration) (worktrees.Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.recs[w.ChatID]; ok && r.State != worktrees.StateFailed && r.State != worktrees.StateRemoved {
		if r.State == worktrees.StateCreating && time.Since(r.UpdatedAt) > stale {
			r.Owner, r.UpdatedAt = w.Owner, time.Now()
			s.recs[w.ChatID] = r
			return r, true, nil
		}
		return r, false, nil
	}
	w.State, w.UpdatedAt = worktrees.StateCreating, time.Now()
	s.recs[w.ChatID] = w
	return w, true, nil
}

func (s *memStore) update(id string, f func(*worktrees.Record)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok {
		return worktrees.ErrNotFound
	}
	f(&r)
	s.recs[id] = r
	return nil
}

func (s *memStore) TouchClaim(_ context.Context, id, _ string) error {
	return s.update(id, func(r *worktrees.Record) { r.UpdatedAt = time.Now() })
}

func (s *memStore) WorkspaceReady(_ context.Context, id, path, branch string) error {
	return s.update(id, func(r *worktrees.Record) { r.State, r.Path, r.Branch = worktrees.StateReady, path, branch })
}

func (s *memStore) WorkspaceFailed(_ context.Context, id, why string) error {
	return s.update(id, func(r *worktrees.Record) { r.State, r.Error = worktrees.StateFailed, why })
}

func (s *memStore) Workspace(_ context.Context, id string) (worktrees.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.recs[id]
	if !ok {
		return r, worktrees.ErrNotFound
	}
	return r, nil
}

func (s *memStore) Workspaces(_ context.Context, f worktrees.Filter) ([]worktrees.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []worktrees.Record
	for _, r := range s.recs {
		if !f.UsedBefore.IsZero() && !r.UsedAt.Before(f.UsedBefore) {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

func (s *memStore) TouchWorkspace(_ context.Context, id string, at time.Time) error {
	return s.update(id, func(r *worktrees.Record) { r.UsedAt = at })
}

func (s *memStore) SetWorkspaceTurnTree(_ context.Context, id, tree string) error {
	return s.update(id, func(r *worktrees.Record) { r.TurnTree = tree })
}

func (s *memStore) SetWorkspacePR(_ context.Context, id string, n int, url string) error {
	return s.update(id, func(r *worktrees.Record) { r.PRNumber, r.PRURL = n, url })
}

func (s *memStore) SetWorkspacePushed(_ context.Context, id, head string) error {
	return s.update(id, func(r *worktrees.Record) { r.PushedHead = head })
}

func (s *memStore) RemoveWorkspace(_ context.Context, id string) error {
	return s.update(id, func(r *worktrees.Record) { r.State = worktrees.StateRemoved })
}

// fakes of the projects, the chats and the agents (run as this process).
type fakes struct {
	repo    worktrees.Repo
	secrets map[string]string
	parents map[string]string
	prompts map[string]string
}

func (f *fakes) Repo(_ context.Context, p string) (worktrees.Repo, bool, error) {
	return f.repo, p == f.repo.Project, nil
}
func (f *fakes) SetCloneDir(_ context.Context, _, dir string) error {
	f.repo.CloneDir = dir
	return nil
}
func (f *fakes) Secrets(context.Context, string) (map[string]string, error) {
	return f.secrets, nil
}
func (f *fakes) ForkedFrom(_ context.Context, id string) (string, error) { return f.parents[id], nil }
func (f *fakes) LastPrompt(_ context.Context, id string) (string, string, error) {
	return f.prompts[id], "slack:UASKER", nil
}

type agents struct{}

func (agents) Hook(string, string, []string) func(*exec.Cmd) { return nil }
func (agents) MakeDir(_ context.Context, dir string) error   { return os.MkdirAll(dir, 0o755) }
func (agents) RemoveDir(_ context.Context, dir string) error { return os.RemoveAll(dir) }
func (agents) Copy(_ context.Context, _, from, to string) error {
	return exec.Command("cp", "-a", from+"/.", to).Run()
}
func (agents) Setup(context.Context, string, string, []string, string, time.Duration) (string, error) {
	return "", nil
}

// writer is an agent that appends its prompt to a file of its cwd.
type writer struct{ file string }

func (w writer) ID() agent.ProviderID { return "writer" }
func (w writer) Run(_ context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	f, err := os.OpenFile(filepath.Join(req.Cwd, w.file), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, _ = f.WriteString(req.Prompt + "\n")
	f.Close()
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.test")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixture is a project whose repository is a local bare origin with one
// commit on main, and a Manager over it.
type fixture struct {
	m      *worktrees.Manager
	f      *fakes
	origin string
	prov   agent.Provider
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	base := t.TempDir()
	origin, seed := filepath.Join(base, "origin.git"), filepath.Join(base, "seed")
	git(t, base, "init", "-q", "--bare", "-b", "main", origin)
	git(t, base, "init", "-q", "-b", "main", seed)
	if err := os.WriteFile(filepath.Join(seed, "notes.txt"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, seed, "add", ".")
	git(t, seed, "commit", "-q", "-m", "seed")
	git(t, seed, "push", "-q", origin, "main")
	f := &fakes{repo: worktrees.Repo{Project: "web", Src: origin, Base: "main"}, secrets: map[string]string{}, parents: map[string]string{}, prompts: map[string]string{}}
	m := worktrees.New(worktrees.Options{Root: filepath.Join(base, "ws"), Owner: "test:1", Git: workspace.New(workspace.Options{}),
		Store: &memStore{recs: map[string]worktrees.Record{}}, Projects: f, Chats: f, Agents: agents{}, Secrets: []string{"bot-secret-value-123"}})
	t.Cleanup(m.Shutdown)
	return &fixture{m: m, f: f, origin: origin, prov: m.Wrap([]agent.Provider{writer{file: "notes.txt"}})[0]}
}

// turn runs one turn of chat id with prompt and returns its events.
func (x *fixture) turn(t *testing.T, id, prompt string) []agent.Event {
	t.Helper()
	x.f.prompts[id] = prompt
	var evs []agent.Event
	err := x.prov.Run(t.Context(), agent.RunRequest{ChatID: id, Project: "web", Prompt: prompt}, func(ev agent.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatalf("turn %s: %v (%v)", id, err, evs)
	}
	return evs
}

const chatA, chatB = "1a2b3c4d-0000-4000-8000-000000000001", "5e6f7a8b-0000-4000-8000-000000000002"

// TestTwoChatsOneProject: two chats of one project change the same file;
// each turn's change (1 file, +1) and branch come before the terminal
// event; each branch holds only its own change and the main clone is
// untouched.
func TestTwoChatsOneProject(t *testing.T) {
	x := newFixture(t)
	for _, c := range []struct{ id, prompt string }{{chatA, "fix the login form"}, {chatB, "add a dark mode"}} {
		evs := x.turn(t, c.id, c.prompt)
		if len(evs) != 2 || evs[0].Change == nil || evs[0].Change.Files != 1 || evs[0].Change.Insertions != 1 || evs[1].Type != agent.EventRunCompleted {
			t.Fatalf("%s: events %+v", c.id, evs)
		}
		if !strings.HasPrefix(evs[0].Change.Branch, "threadline/") || !strings.HasSuffix(evs[0].Change.Branch, "-"+c.id[:8]) {
			t.Errorf("branch %q", evs[0].Change.Branch)
		}
	}
	for id, want := range map[string]string{chatA: "start\nfix the login form\n", chatB: "start\nadd a dark mode\n"} {
		rec, ok, err := x.m.Ready(t.Context(), id)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		if b, _ := os.ReadFile(filepath.Join(rec.Path, "notes.txt")); string(b) != want {
			t.Errorf("%s's file: %q, want %q", id, b, want)
		}
	}
	main := x.f.repo.CloneDir
	if st := git(t, main, "status", "--porcelain"); st != "" {
		t.Errorf("the main clone changed: %s", st)
	}
	if b, _ := os.ReadFile(filepath.Join(main, "notes.txt")); string(b) != "start\n" {
		t.Errorf("the main clone's file: %q", b)
	}
}

// TestPushAndGate: push commits the agent's work as the bot with the
// asker's trailer and pushes the branch to the origin; a planted token
// stops the next push, naming the file and the rule, and pushes nothing.
func TestPushAndGate(t *testing.T) {
	x := newFixture(t)
	x.turn(t, chatA, "fix the login form")
	out, err := x.m.Push(t.Context(), chatA, worktrees.Person{ID: "slack:UPUSH", Name: "Pat", Email: "pat@x.test"})
	if err != nil {
		t.Fatal(err)
	}
	if got := git(t, x.origin, "rev-parse", out.Branch); got != out.Head {
		t.Fatalf("origin has %s at %s, pushed %s", out.Branch, got, out.Head)
	}
	msg := git(t, x.origin, "log", "-1", "--format=%B", out.Branch)
	if !strings.HasPrefix(msg, "fix the login form") || !strings.Contains(msg, "Co-authored-by: Pat <pat@x.test>") || !strings.Contains(msg, "Requested-by: slack:UASKER") {
		t.Errorf("commit message %q", msg)
	}
	rec, _, _ := x.m.Ready(t.Context(), chatA)
	if err := os.WriteFile(filepath.Join(rec.Path, "deploy.env"), []byte("SLACK=xoxb-"+strings.Repeat("1", 12)+"-"+strings.Repeat("2", 13)+"-abcdefghijklmnopqrstuvwx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = x.m.Push(t.Context(), chatA, worktrees.Person{ID: "slack:UPUSH"})
	var refused *worktrees.Refused
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "deploy.env") {
		t.Fatalf("push with a token: %v", err)
	}
	if got := git(t, x.origin, "rev-parse", out.Branch); got != out.Head {
		t.Errorf("the refused push moved the origin's branch to %s", got)
	}
	// The agent commits the key itself and removes it in a later commit:
	// the branch's diff is clean, its history is not.
	git(t, rec.Path, "add", "deploy.env")
	git(t, rec.Path, "commit", "-q", "-m", "add deploy env")
	git(t, rec.Path, "rm", "-q", "deploy.env")
	git(t, rec.Path, "commit", "-q", "-m", "remove it again")
	_, err = x.m.Push(t.Context(), chatA, worktrees.Person{ID: "slack:UPUSH"})
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "deploy.env") {
		t.Fatalf("push of a history holding a token: %v", err)
	}
	if got := git(t, x.origin, "rev-parse", out.Branch); got != out.Head {
		t.Errorf("the refused push moved the origin's branch to %s", got)
	}
}

// TestForkStartsFromParent: a fork's workspace starts from its parent's
// head and work, on its own branch, and never changes the parent's files.
func TestForkStartsFromParent(t *testing.T) {
	x := newFixture(t)
	x.turn(t, chatA, "parent work")
	x.f.parents[chatB] = chatA
	x.turn(t, chatB, "fork work")
	a, _, _ := x.m.Ready(t.Context(), chatA)
	b, _, _ := x.m.Ready(t.Context(), chatB)
	if got, _ := os.ReadFile(filepath.Join(b.Path, "notes.txt")); string(got) != "start\nparent work\nfork work\n" {
		t.Errorf("the fork's file %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(a.Path, "notes.txt")); string(got) != "start\nparent work\n" {
		t.Errorf("the parent's file %q", got)
	}
	if a.Branch == b.Branch {
		t.Error("the fork shares its parent's branch")
	}
}

// TestMergeAndConflict: a chat's branch lands on main (the origin's);
// another that changed the same line conflicts, lands nothing and lists the
// file; close refuses to lose its work until discard.
func TestMergeAndConflict(t *testing.T) {
	x := newFixture(t)
	x.turn(t, chatA, "first")
	x.turn(t, chatB, "second")
	landed, err := x.m.Merge(t.Context(), chatA, worktrees.Person{ID: "slack:U1"})
	if err != nil || landed.Commits != 1 {
		t.Fatalf("merge A: %+v %v", landed, err)
	}
	if got := git(t, x.origin, "show", "main:notes.txt"); got != "start\nfirst" {
		t.Errorf("origin's main: %q", got)
	}
	before := git(t, x.origin, "rev-parse", "main")
	_, err = x.m.Merge(t.Context(), chatB, worktrees.Person{ID: "slack:U1"})
	var conflict *workspace.ConflictError
	if !errors.As(err, &conflict) || strings.Join(conflict.Files, ",") != "notes.txt" {
		t.Fatalf("merge B: %v", err)
	}
	if after := git(t, x.origin, "rev-parse", "main"); after != before {
		t.Error("a conflicting merge landed")
	}
	if _, err := x.m.Close(t.Context(), chatB, false); !errors.Is(err, workspace.ErrUnpushed) {
		t.Fatalf("close with unpushed work: %v", err)
	}
	rec, err := x.m.Close(t.Context(), chatB, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rec.Path); !os.IsNotExist(err) {
		t.Errorf("the clone is still there: %v", err)
	}
}

// TestLooseChatsShareNothing: chats without a project in a directory that
// is no repository keep it; a fork of one gets a copy of its parent's own
// directory, the parent's files unchanged.
func TestLooseChatsShareNothing(t *testing.T) {
	x := newFixture(t)
	work := t.TempDir()
	parentDir, forkDir := filepath.Join(work, chatA), filepath.Join(work, chatB)
	for _, d := range []string{parentDir, forkDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(id, dir, prompt string) {
		t.Helper()
		if err := x.prov.Run(t.Context(), agent.RunRequest{ChatID: id, Cwd: dir, Prompt: prompt}, func(agent.Event) {}); err != nil {
			t.Fatal(err)
		}
	}
	run(chatA, parentDir, "parent")
	x.f.parents[chatB] = chatA
	run(chatB, forkDir, "fork")
	if got, _ := os.ReadFile(filepath.Join(forkDir, "notes.txt")); string(got) != "parent\nfork\n" {
		t.Errorf("the fork's copy %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(parentDir, "notes.txt")); string(got) != "parent\n" {
		t.Errorf("the parent's file %q", got)
	}
}

// gated is an agent whose run says it started and waits for release.
type gated struct {
	started chan string
	release chan struct{}
}

func (g gated) ID() agent.ProviderID { return "gated" }
func (g gated) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	g.started <- req.ChatID
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	emit(agent.Event{Type: agent.EventRunCompleted})
	return nil
}

// TestSharedDirTakesTurns: chats sharing one directory that is no
// repository (a channel's workdir, worktrees off) run one at a time: the
// second says it waits, an interrupted waiting run gives up without
// running, and the next runs once the first ended.
func TestSharedDirTakesTurns(t *testing.T) {
	x := newFixture(t)
	g := gated{started: make(chan string, 3), release: make(chan struct{})}
	prov := x.m.Wrap([]agent.Provider{g})[0]
	shared := t.TempDir()
	type outcome struct {
		err    error
		waited bool
	}
	start := func(ctx context.Context, id string) chan outcome {
		done := make(chan outcome, 1)
		waiting := make(chan struct{})
		var once sync.Once
		go func() {
			var waited bool
			err := prov.Run(ctx, agent.RunRequest{ChatID: id, Cwd: shared}, func(ev agent.Event) {
				if ev.Subtype == "workspace_wait" {
					waited = true
					once.Do(func() { close(waiting) })
				}
			})
			once.Do(func() { close(waiting) })
			done <- outcome{err, waited}
		}()
		<-waiting
		return done
	}
	a := make(chan outcome, 1)
	go func() {
		err := prov.Run(t.Context(), agent.RunRequest{ChatID: chatA, Cwd: shared}, func(agent.Event) {})
		a <- outcome{err: err}
	}()
	if got := <-g.started; got != chatA {
		t.Fatalf("started %s", got)
	}
	ctxB, cancelB := context.WithCancel(t.Context())
	b := start(ctxB, chatB) // returns once B says it waits
	const chatC = "9c9c9c9c-0000-4000-8000-000000000003"
	c := start(t.Context(), chatC)
	cancelB()
	if r := <-b; !r.waited || !errors.Is(r.err, context.Canceled) {
		t.Errorf("the interrupted waiting run: waited %v, %v", r.waited, r.err)
	}
	select {
	case id := <-g.started:
		t.Fatalf("%s ran while chat A held the directory", id)
	default:
	}
	g.release <- struct{}{}
	if r := <-a; r.err != nil {
		t.Fatal(r.err)
	}
	if got := <-g.started; got != chatC {
		t.Fatalf("after A, %s ran; want C", got)
	}
	g.release <- struct{}{}
	if r := <-c; r.err != nil || !r.waited {
		t.Errorf("C: waited %v, %v", r.waited, r.err)
	}
}
