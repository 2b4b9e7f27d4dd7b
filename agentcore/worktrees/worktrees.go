package worktrees

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/forge"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
	"github.com/threadline-bot/threadline/agentcore/workspace"
)

// States of a Record.
const (
	StateCreating = "creating"
	StateReady    = "ready"
	StateFailed   = "failed"
	StateRemoved  = "removed"
)

// Record is a chat's workspace as the store keeps it (the workspaces
// table; the fields are the store's row's).
type Record struct {
	ChatID      string
	Project     string
	RepoDir     string
	Path        string
	Branch      string
	Base        string
	ForkedFrom  string
	State       string
	Owner       string
	Error       string
	RequestedBy string
	PRNumber    int
	PRURL       string
	PushedHead  string
	TurnTree    string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	UsedAt      time.Time
}

// Filter selects records (the store's WorkspaceFilter).
type Filter struct {
	Project    string
	States     []string
	UsedBefore time.Time
}

// ErrNotFound is returned (wrapped) by a Store for a chat without a record.
var ErrNotFound = errors.New("worktrees: no workspace")

// Store keeps the records (store.Store through an adapter).
type Store interface {
	ClaimWorkspace(ctx context.Context, w Record, staleAfter time.Duration) (Record, bool, error)
	TouchClaim(ctx context.Context, chatID, owner string) error
	WorkspaceReady(ctx context.Context, chatID, path, branch string) error
	WorkspaceFailed(ctx context.Context, chatID, errText string) error
	Workspace(ctx context.Context, chatID string) (Record, error)
	Workspaces(ctx context.Context, f Filter) ([]Record, error)
	TouchWorkspace(ctx context.Context, chatID string, at time.Time) error
	SetWorkspaceTurnTree(ctx context.Context, chatID, tree string) error
	SetWorkspacePR(ctx context.Context, chatID string, number int, url string) error
	SetWorkspacePushed(ctx context.Context, chatID, head string) error
	RemoveWorkspace(ctx context.Context, chatID string) error
}

// Repo is a project's repository.
type Repo struct {
	Project string
	// Src is where it is cloned from (a URL or a host path), Base its base
	// branch, Setup the command run in a new clone, Forge and ForgeURL its
	// forge (gitea, github, gitlab); CloneDir its main clone ("" until made).
	Src, Base, Setup, Forge, ForgeURL, CloneDir string
}

// Projects are the projects' repositories and secrets.
type Projects interface {
	// Repo is project's repository; ok is false for a project without one.
	Repo(ctx context.Context, project string) (r Repo, ok bool, err error)
	// SetCloneDir records where the project's main clone is.
	SetCloneDir(ctx context.Context, project, dir string) error
	// Secrets are the project's secrets (GIT_TOKEN, FORGE_TOKEN, ...).
	Secrets(ctx context.Context, project string) (map[string]string, error)
}

// Chats are what the manager reads of a chat.
type Chats interface {
	// ForkedFrom is the chat id chatID was forked from ("" for none).
	ForkedFrom(ctx context.Context, chatID string) (string, error)
	// LastPrompt is the chat's latest user prompt (a commit's message) and
	// who sent it.
	LastPrompt(ctx context.Context, chatID string) (text, by string, err error)
}

// Agents runs the chat's side of git and the setup command as the chat's
// agent: its user, its sandbox.
type Agents interface {
	// Hook runs a git command in dir (the chat's clone, or a spare) as the
	// agent of chatID, allowed to write dir and read read (the main
	// clone); nil runs it as this process.
	Hook(chatID, dir string, read []string) func(*exec.Cmd)
	// MakeDir makes dir (a clone's) for the agent user; RemoveDir removes
	// it with everything the agent put in it.
	MakeDir(ctx context.Context, dir string) error
	RemoveDir(ctx context.Context, dir string) error
	// Setup runs command with sh in dir as the agent of chatID, confined
	// as the chat's runs are (read: the main clone), at most limit, and
	// returns the tail of its output.
	Setup(ctx context.Context, chatID, dir string, read []string, command string, limit time.Duration) (string, error)
	// Copy copies the directory from into the new directory to (a fork's
	// own directory) as the agent, never changing from.
	Copy(ctx context.Context, chatID, from, to string) error
}

// Options configure a Manager.
type Options struct {
	// Root holds the main clones and the chats' clones.
	Root string
	// BranchPrefix starts every chat branch; "" is "threadline/".
	BranchPrefix string
	// Owner names this replica in claims (host:pid).
	Owner string
	// StaleAfter is how long a claim may go without a heartbeat before
	// another replica takes the creation over; 0 is 2 minutes.
	StaleAfter time.Duration
	// SetupLimit bounds a project's setup command; 0 is 10 minutes.
	SetupLimit time.Duration
	// NoWorktrees reports whether loose chats in dir keep the directory
	// itself (a channel's worktrees: off).
	NoWorktrees func(dir string) bool
	Git         *workspace.Git
	Store       Store
	Projects    Projects
	Chats       Chats
	Agents      Agents
	// Secrets are the bot's configured secret values the push gate refuses
	// (a redactor); the project's secrets are added per push.
	Secrets []string
	// MaxFileBytes is the push gate's file size limit; 0 is 5 MB.
	MaxFileBytes int64
	// Forge opens a forge client; nil is forge.New with no HTTP client.
	Forge func(kind, baseURL, token string) (forge.Forge, error)
	Log   *slog.Logger
}

// Manager is the chats' workspaces.
type Manager struct {
	opts Options
	git  *workspace.Git
	log  *slog.Logger
	// dirs serializes the runs of chats that share a directory (worktrees
	// off) in this process.
	dirs sync.Map // string -> *sync.Mutex
	// spares are the main clones whose spare is being made; background
	// counts the goroutines making them (Wait).
	spares     sync.Map // string -> struct{}
	background sync.WaitGroup
	bgCtx      context.Context
	stopBg     context.CancelFunc
}

// Shutdown stops making spare clones in the background and waits until
// none is being made.
func (m *Manager) Shutdown() {
	m.stopBg()
	m.background.Wait()
}

// New returns a Manager.
func New(opts Options) *Manager {
	if opts.BranchPrefix == "" {
		opts.BranchPrefix = "threadline/"
	}
	if opts.StaleAfter <= 0 {
		opts.StaleAfter = 2 * time.Minute
	}
	if opts.SetupLimit <= 0 {
		opts.SetupLimit = 10 * time.Minute
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = shipgate.DefaultMaxSize
	}
	if opts.Forge == nil {
		opts.Forge = func(kind, baseURL, token string) (forge.Forge, error) { return forge.New(kind, baseURL, token, nil) }
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	m := &Manager{opts: opts, git: opts.Git, log: opts.Log}
	m.bgCtx, m.stopBg = context.WithCancel(context.Background())
	return m
}

// worktree is rec as agentcore/workspace works on it.
func (m *Manager) worktree(rec Record) workspace.Worktree {
	return workspace.Worktree{Main: rec.RepoDir, Dir: rec.Path, Branch: rec.Branch, Base: rec.Base,
		Agent: m.opts.Agents.Hook(rec.ChatID, rec.Path, []string{rec.RepoDir})}
}

// Ready is the chat's ready workspace; ok is false when it has none.
func (m *Manager) Ready(ctx context.Context, chatID string) (Record, bool, error) {
	rec, err := m.opts.Store.Workspace(ctx, chatID)
	if errors.Is(err, ErrNotFound) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, err
	}
	return rec, rec.State == StateReady, nil
}

// plan is where a chat's workspace comes from: the main repository, its
// base, the project's setup, and where chats' clones of it live.
type plan struct {
	project, main, base, setup, chats string
}

// planFor decides whether the run of req gets a workspace of its own and
// from what; nil plan: it keeps its directory.
func (m *Manager) planFor(ctx context.Context, req agent.RunRequest) (*plan, error) {
	if req.Project != "" {
		repo, ok, err := m.opts.Projects.Repo(ctx, req.Project)
		if err != nil || !ok {
			return nil, err
		}
		dir, err := m.mainClone(ctx, repo)
		if err != nil {
			return nil, err
		}
		return &plan{project: repo.Project, main: dir, base: repo.Base, setup: repo.Setup, chats: filepath.Join(m.opts.Root, repo.Project, "chats")}, nil
	}
	if req.Cwd == "" || m.opts.NoWorktrees != nil && m.opts.NoWorktrees(req.Cwd) {
		return nil, nil
	}
	if ok, err := m.git.IsRepo(ctx, req.Cwd); err != nil || !ok {
		return nil, nil // not a repository: the chat keeps its directory
	}
	base, err := m.git.HeadBranch(ctx, req.Cwd)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256([]byte(filepath.Clean(req.Cwd)))
	return &plan{main: req.Cwd, base: base, chats: filepath.Join(m.opts.Root, "_dirs", hex.EncodeToString(sum[:4]), "chats")}, nil
}

// mainClone is the project's main clone, made on first use.
func (m *Manager) mainClone(ctx context.Context, repo Repo) (string, error) {
	if repo.CloneDir != "" {
		if _, err := os.Stat(repo.CloneDir); err == nil {
			return repo.CloneDir, nil
		}
	}
	dir := filepath.Join(m.opts.Root, repo.Project, "main")
	if err := traversableDirs(m.opts.Root, filepath.Dir(dir)); err != nil {
		return "", err
	}
	if err := m.git.Clone(ctx, repo.Src, dir, repo.Base); err != nil {
		return "", err
	}
	if err := m.opts.Projects.SetCloneDir(ctx, repo.Project, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// DefaultBranch is the branch src's HEAD names.
func (m *Manager) DefaultBranch(ctx context.Context, src string) (string, error) {
	return m.git.DefaultBranch(ctx, src)
}

// Clone makes (or checks) project's main clone now: `project add --repo`
// fails at once when the repository cannot be cloned or has no base.
func (m *Manager) Clone(ctx context.Context, repo Repo) (string, error) {
	repo.CloneDir = ""
	return m.mainClone(ctx, repo)
}

// traversableDirs creates root and each directory down to dir, mode 0711:
// the agent user passes through them to its clone (they list nothing).
func traversableDirs(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not below %s", dir, root)
	}
	cur := root
	for _, part := range append([]string{""}, strings.Split(rel, string(filepath.Separator))...) {
		if part == "." {
			continue
		}
		cur = filepath.Join(cur, part)
		if err := os.MkdirAll(cur, 0o711); err != nil {
			return err
		}
		if err := os.Chmod(cur, 0o711); err != nil {
			return err
		}
	}
	return nil
}

// prepare makes the chat's workspace ready for the run of req (creating it
// on the chat's first run, or finding it), or returns nil when the chat
// has none. notify tells the thread about a setup's failure.
func (m *Manager) prepare(ctx context.Context, req agent.RunRequest, notify func(string)) (*Record, error) {
	log := m.log.With(logkey.ChatID, req.ChatID)
	if rec, ok, err := m.Ready(ctx, req.ChatID); err != nil {
		return nil, err
	} else if ok {
		if _, err := os.Stat(rec.Path); err == nil {
			_ = m.opts.Store.TouchWorkspace(ctx, rec.ChatID, time.Now())
			return &rec, nil
		}
		log.Warn("workspace: the chat's clone is gone; making it again", logkey.Path, rec.Path)
	}
	p, err := m.planFor(ctx, req)
	if err != nil || p == nil {
		return nil, err
	}
	parent, err := m.opts.Chats.ForkedFrom(ctx, req.ChatID)
	if err != nil {
		return nil, err
	}
	_, by, _ := m.opts.Chats.LastPrompt(ctx, req.ChatID)
	want := Record{
		ChatID: req.ChatID, Project: p.project, RepoDir: p.main,
		Path:   filepath.Join(p.chats, req.ChatID),
		Branch: workspace.BranchName(m.opts.BranchPrefix, req.Prompt, req.ChatID), Base: p.base,
		ForkedFrom: parent, Owner: m.opts.Owner, RequestedBy: by,
	}
	for {
		rec, claimed, err := m.opts.Store.ClaimWorkspace(ctx, want, m.opts.StaleAfter)
		if err != nil {
			return nil, err
		}
		if !claimed {
			switch rec.State {
			case StateReady:
				return &rec, nil
			case StateCreating: // another replica makes it: wait for it
				if err := sleep(ctx, time.Second); err != nil {
					return nil, err
				}
				continue
			}
		}
		return m.create(ctx, rec, p, notify)
	}
}

// create makes the claimed workspace rec and marks it ready (or failed).
func (m *Manager) create(ctx context.Context, rec Record, p *plan, notify func(string)) (*Record, error) {
	beat, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		t := time.NewTicker(m.opts.StaleAfter / 4)
		defer t.Stop()
		for {
			select {
			case <-beat.Done():
				return
			case <-t.C:
				_ = m.opts.Store.TouchClaim(beat, rec.ChatID, rec.Owner)
			}
		}
	}()
	if err := traversableDirs(m.opts.Root, p.chats); err != nil {
		return nil, m.failed(ctx, rec, err)
	}
	wt := m.worktree(rec)
	var err error
	if parent, ok, perr := m.Ready(ctx, rec.ForkedFrom); rec.ForkedFrom != "" && perr == nil && ok && parent.RepoDir == rec.RepoDir {
		wt, err = m.git.Fork(ctx, m.worktree(parent), wt)
	} else {
		wt, err = m.git.Create(ctx, wt)
	}
	if err != nil {
		return nil, m.failed(ctx, rec, err)
	}
	if p.setup != "" {
		tail, err := m.opts.Agents.Setup(ctx, rec.ChatID, wt.Dir, []string{rec.RepoDir}, p.setup, m.opts.SetupLimit)
		if err != nil {
			notify(fmt.Sprintf("The project's setup (`%s`) failed in the new workspace: %v\n%s", p.setup, err, tail))
		}
	}
	if err := m.opts.Store.WorkspaceReady(ctx, rec.ChatID, wt.Dir, wt.Branch); err != nil {
		return nil, err
	}
	rec.State, rec.Path, rec.Branch = StateReady, wt.Dir, wt.Branch
	m.log.Info("workspace ready", logkey.ChatID, rec.ChatID, logkey.Branch, rec.Branch, logkey.Path, rec.Path)
	m.refillSpare(rec.RepoDir, rec.Base, p.chats)
	return &rec, nil
}

// refillSpare makes, in the background, a spare clone of main at base in
// chats unless one is ready or being made: the next chat's Create takes it
// (a rename and a checkout of only what differs) instead of checking out
// every file, which on a large repository is the difference between
// milliseconds and seconds.
func (m *Manager) refillSpare(main, base, chats string) {
	if _, busy := m.spares.LoadOrStore(main, struct{}{}); busy {
		return
	}
	m.background.Add(1)
	go func() {
		defer m.background.Done()
		defer m.spares.Delete(main)
		ctx, cancel := context.WithTimeout(m.bgCtx, 30*time.Minute)
		defer cancel()
		if entries, err := m.git.List(ctx, main); err == nil {
			for _, e := range entries {
				if e.Spare && e.Base == base && filepath.Dir(e.Dir) == chats {
					return
				}
			}
		}
		dir := filepath.Join(chats, fmt.Sprintf(".spare-%d", time.Now().UnixNano()))
		if err := m.git.Spare(ctx, main, base, dir, m.opts.Agents.Hook("", dir, []string{main})); err != nil {
			m.log.Warn("workspace: make a spare clone", logkey.Path, dir, "err", err)
		}
	}()
}

// failed records why a creation failed and returns err.
func (m *Manager) failed(ctx context.Context, rec Record, err error) error {
	if ferr := m.opts.Store.WorkspaceFailed(context.WithoutCancel(ctx), rec.ChatID, err.Error()); ferr != nil {
		m.log.Warn("workspace: record the failure", logkey.ChatID, rec.ChatID, "err", ferr)
	}
	return fmt.Errorf("the chat's workspace: %w", err)
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
