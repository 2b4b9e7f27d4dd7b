package execution

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/procrun/procruntest"
	"github.com/threadline-bot/threadline/agentcore/workspace"
	"github.com/threadline-bot/threadline/agentcore/worktrees"
)

// wsFakes are the projects and chats of TestWorkspacesAsSandboxedAgent.
type wsFakes struct{ repo worktrees.Repo }

func (f *wsFakes) Repo(_ context.Context, p string) (worktrees.Repo, bool, error) {
	return f.repo, p == f.repo.Project, nil
}
func (f *wsFakes) SetCloneDir(_ context.Context, _, dir string) error {
	f.repo.CloneDir = dir
	return nil
}
func (f *wsFakes) Secrets(context.Context, string) (map[string]string, error) {
	return nil, nil
}
func (f *wsFakes) ForkedFrom(context.Context, string) (string, error) { return "", nil }
func (f *wsFakes) LastPrompt(context.Context, string) (string, string, error) {
	return "change notes", "slack:U1", nil
}

// wsStore is one chat's record in memory.
type wsStore struct{ rec worktrees.Record }

func (s *wsStore) ClaimWorkspace(_ context.Context, w worktrees.Record, _ time.Duration) (worktrees.Record, bool, error) {
	if s.rec.ChatID != "" && s.rec.State != worktrees.StateRemoved {
		return s.rec, false, nil
	}
	w.State = worktrees.StateCreating
	s.rec = w
	return w, true, nil
}
func (s *wsStore) TouchClaim(context.Context, string, string) error { return nil }
func (s *wsStore) WorkspaceReady(_ context.Context, _, path, branch string) error {
	s.rec.State, s.rec.Path, s.rec.Branch = worktrees.StateReady, path, branch
	return nil
}
func (s *wsStore) WorkspaceFailed(_ context.Context, _, why string) error {
	s.rec.State, s.rec.Error = worktrees.StateFailed, why
	return nil
}
func (s *wsStore) Workspace(context.Context, string) (worktrees.Record, error) {
	if s.rec.ChatID == "" {
		return s.rec, worktrees.ErrNotFound
	}
	return s.rec, nil
}
func (s *wsStore) Workspaces(context.Context, worktrees.Filter) ([]worktrees.Record, error) {
	return []worktrees.Record{s.rec}, nil
}
func (s *wsStore) TouchWorkspace(context.Context, string, time.Time) error    { return nil }
func (s *wsStore) SetWorkspaceTurnTree(context.Context, string, string) error { return nil }
func (s *wsStore) SetWorkspacePR(context.Context, string, int, string) error  { return nil }
func (s *wsStore) SetWorkspacePushed(_ context.Context, _, h string) error {
	s.rec.PushedHead = h
	return nil
}
func (s *wsStore) RemoveWorkspace(context.Context, string) error {
	s.rec.State = worktrees.StateRemoved
	return nil
}

// shellAgent is an agent whose turn runs its prompt with sh in the
// workspace, as the agent user in the chat's sandbox (as a real CLI's tool).
type shellAgent struct{ iso *procrun.Isolation }

func (shellAgent) ID() agent.ProviderID { return "fake" }
func (a shellAgent) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", req.Prompt)
	cmd.Dir = req.Cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: a.iso.UID, Gid: a.iso.GID}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		emit(agent.Event{Type: agent.EventRunFailed, Text: string(out)})
		return err
	}
	emit(agent.Event{Type: agent.EventRunCompleted, Text: string(out)})
	return nil
}

// TestWorkspacesAsSandboxedAgent: a project chat's clone is made, worked
// on, snapshotted, pushed, merged and removed with its git side run as the
// agent user in the chat's sandbox (Workspaces), the bot running git only
// in the main clone: the clone belongs to the agent, the agent's own git
// commit works in it, the main clone stays clean, the origin gets the
// branch and the merge, and Close empties the clone as the agent.
func TestWorkspacesAsSandboxedAgent(t *testing.T) {
	f := newSandboxFixture(t)
	base := procruntest.TraversableDir(t, "tlexec")
	origin, seed := filepath.Join(base, "origin.git"), filepath.Join(base, "seed")
	run := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@x.test", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@x.test")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run(base, "init", "-q", "--bare", "-b", "main", origin)
	run(base, "init", "-q", "-b", "main", seed)
	if err := os.WriteFile(filepath.Join(seed, "notes.txt"), []byte("start\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run(seed, "add", ".")
	run(seed, "commit", "-q", "-m", "seed")
	run(seed, "push", "-q", origin, "main")
	agents := Workspaces{Iso: f.iso, Sandbox: f.sb}
	st := &wsStore{}
	m := worktrees.New(worktrees.Options{Root: filepath.Join(base, "ws"), Owner: "t:1",
		Git:   workspace.New(workspace.Options{RequireAgent: true, MakeDir: agents.MakeDir, RemoveDir: agents.RemoveDir}),
		Store: st, Projects: &wsFakes{repo: worktrees.Repo{Project: "web", Src: origin, Base: "main"}}, Chats: &wsFakes{}, Agents: agents})
	t.Cleanup(m.Shutdown)
	prov := m.Wrap([]agent.Provider{shellAgent{iso: f.iso}})[0]
	const chat = "9c8b7a6d-0000-4000-8000-000000000001"
	var evs []agent.Event
	script := `echo changed >> notes.txt && git -c user.name=a -c user.email=a@x.test commit -qam "agent's own commit" && echo more >> notes.txt`
	if err := prov.Run(t.Context(), agent.RunRequest{ChatID: chat, Project: "web", Prompt: script}, func(ev agent.Event) { evs = append(evs, ev) }); err != nil {
		t.Fatalf("turn: %v %+v", err, evs)
	}
	if len(evs) != 2 || evs[0].Change == nil || evs[0].Change.Files != 1 || evs[0].Change.Insertions != 2 {
		t.Fatalf("turn events %+v", evs)
	}
	fi, err := os.Stat(st.rec.Path)
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != f.iso.UID {
		t.Fatalf("the clone %s: %v %v", st.rec.Path, fi, err)
	}
	main := filepath.Join(base, "ws", "web", "main")
	if s := run(main, "status", "--porcelain"); s != "" {
		t.Errorf("the main clone changed: %s", s)
	}
	pushed, err := m.Push(t.Context(), chat, worktrees.Person{ID: "slack:U1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := run(origin, "show", pushed.Branch+":notes.txt"); got != "start\nchanged\nmore" {
		t.Errorf("pushed notes.txt %q", got)
	}
	if _, err := m.Merge(t.Context(), chat, worktrees.Person{ID: "slack:U1"}); err != nil {
		t.Fatal(err)
	}
	if got := run(origin, "show", "main:notes.txt"); got != "start\nchanged\nmore" {
		t.Errorf("merged main %q", got)
	}
	if _, err := m.Close(t.Context(), chat, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(st.rec.Path); !os.IsNotExist(err) {
		t.Errorf("the clone is still there: %v", err)
	}
}
