package worktrees

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/forge"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
	"github.com/threadline-bot/threadline/agentcore/workspace"
)

// Errors of the ship actions.
var (
	// ErrNoWorkspace: the chat has no workspace of its own.
	ErrNoWorkspace = errors.New("worktrees: the chat has no workspace")
	// ErrNoRemote: the workspace's repository has nowhere to push to.
	ErrNoRemote = errors.New("worktrees: the repository has no remote to push to")
	// ErrNoForge: the project names no forge for pull requests.
	ErrNoForge = errors.New("worktrees: no forge is set for pull requests")
)

// Person is who a ship action is done for (a commit's trailer, a PR's body).
type Person struct {
	// ID is their platform-qualified id (slack:U123); Name and Email as
	// their profile has them ("" when unknown).
	ID, Name, Email string
}

// trailer is the commit trailer naming p: Co-authored-by with an email,
// else Requested-by with their name and id.
func (p Person) trailer() string {
	name := p.Name
	if name == "" {
		name = p.ID
	}
	if p.Email != "" {
		return fmt.Sprintf("Co-authored-by: %s <%s>", name, p.Email)
	}
	if name == p.ID {
		return "Requested-by: " + p.ID
	}
	return fmt.Sprintf("Requested-by: %s (%s)", name, p.ID)
}

// Refused is a push the gates stopped: nothing was pushed.
type Refused struct {
	Branch   string
	Findings []shipgate.Finding
}

func (e *Refused) Error() string {
	lines := make([]string, 0, len(e.Findings))
	for i, f := range e.Findings {
		if i == 10 {
			lines = append(lines, fmt.Sprintf("… and %d more", len(e.Findings)-10))
			break
		}
		lines = append(lines, f.String())
	}
	return fmt.Sprintf("nothing was pushed: %s would publish what it must not:\n%s", e.Branch, strings.Join(lines, "\n"))
}

// record is the chat's ready workspace, or ErrNoWorkspace.
func (m *Manager) record(ctx context.Context, chatID string) (Record, error) {
	rec, ok, err := m.Ready(ctx, chatID)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		return Record{}, ErrNoWorkspace
	}
	return rec, nil
}

// Diff is the chat's branch against its base, uncommitted work included.
func (m *Manager) Diff(ctx context.Context, chatID string) (branch string, st workspace.Stat, patch []byte, err error) {
	rec, err := m.record(ctx, chatID)
	if err != nil {
		return "", st, nil, err
	}
	patch, st, err = m.git.BranchDiff(ctx, m.worktree(rec))
	return rec.Branch, st, patch, err
}

// Pushed is what Push did.
type Pushed struct {
	Branch, Head, Remote string
	// Committed is the commit made of the agent's uncommitted work ("" for
	// none).
	Committed string
	Stat      workspace.Stat
}

// credentials are the project's push credential and forge token.
func (m *Manager) credentials(ctx context.Context, rec Record, repo Repo) (*workspace.Credential, string, error) {
	if rec.Project == "" {
		return nil, "", nil
	}
	secrets, err := m.opts.Projects.Secrets(ctx, rec.Project)
	if err != nil {
		return nil, "", err
	}
	forgeToken := secrets["FORGE_TOKEN"]
	token := secrets["GIT_TOKEN"]
	if token == "" {
		token = forgeToken
	}
	if token == "" {
		return nil, forgeToken, nil
	}
	user := ""
	switch repo.Forge {
	case forge.KindGitLab:
		user = "oauth2"
	case forge.KindGitea:
		if r, err := forge.ParseRemote(repo.Src); err == nil {
			user = r.Owner
		}
	}
	return &workspace.Credential{Username: user, Token: token}, forgeToken, nil
}

// repoOf is the record's project repository (the zero Repo for a loose
// repository).
func (m *Manager) repoOf(ctx context.Context, rec Record) (Repo, error) {
	if rec.Project == "" {
		return Repo{}, nil
	}
	repo, ok, err := m.opts.Projects.Repo(ctx, rec.Project)
	if err == nil && !ok {
		err = ErrNoWorkspace
	}
	return repo, err
}

// Push commits what the agent left uncommitted (as the bot, for by, with
// the chat's latest prompt as the message), imports the branch into the
// main clone, runs the push gates on its whole diff and pushes it. A gate
// refusal is a *Refused; a remote with commits the branch lacks is
// workspace.ErrNotFastForward.
func (m *Manager) Push(ctx context.Context, chatID string, by Person) (Pushed, error) {
	rec, err := m.record(ctx, chatID)
	if err != nil {
		return Pushed{}, err
	}
	repo, err := m.repoOf(ctx, rec)
	if err != nil {
		return Pushed{}, err
	}
	if !m.hasRemote(rec, repo) {
		return Pushed{}, ErrNoRemote
	}
	out, err := m.ship(ctx, rec, by)
	if err != nil {
		return out, err
	}
	cred, _, err := m.credentials(ctx, rec, repo)
	if err != nil {
		return out, err
	}
	if err := m.git.Push(ctx, m.worktree(rec), workspace.PushOptions{Credential: cred, Head: out.Head}); err != nil {
		return out, err
	}
	if err := m.opts.Store.SetWorkspacePushed(ctx, chatID, out.Head); err != nil {
		m.log.Warn("workspace: record the push", logkey.ChatID, chatID, "err", err)
	}
	out.Remote = repo.Src
	return out, nil
}

// hasRemote reports whether the workspace's repository has somewhere to
// push to: a project's source, a loose repository's origin.
func (m *Manager) hasRemote(rec Record, repo Repo) bool {
	if rec.Project != "" {
		return repo.Src != ""
	}
	_, err := os.Stat(rec.RepoDir)
	return err == nil
}

// ship checks, commits and imports the chat's work and checks it again;
// it returns the head to push. The gates (gate) run twice: first on the
// chat's whole change as its own side reports it (uncommitted work
// included), so that a refused push commits nothing; then, after the
// commit and the import, on what a push would publish as the bot reads it
// from the main clone: every new commit's patch, so that a key one commit
// added and a later one removed is refused too.
func (m *Manager) ship(ctx context.Context, rec Record, by Person) (Pushed, error) {
	out := Pushed{Branch: rec.Branch}
	wt := m.worktree(rec)
	secrets := append([]string(nil), m.opts.Secrets...)
	if rec.Project != "" {
		if ps, err := m.opts.Projects.Secrets(ctx, rec.Project); err == nil {
			for _, v := range ps {
				secrets = append(secrets, v)
			}
		}
	}
	gate := func(patch []byte) error {
		findings, err := shipgate.CheckDiff(patch, shipgate.Options{Secrets: redact.New(secrets...), MaxSize: m.opts.MaxFileBytes})
		if err != nil {
			return fmt.Errorf("check the branch before pushing: %w", err)
		}
		if len(findings) > 0 {
			return &Refused{Branch: rec.Branch, Findings: findings}
		}
		return nil
	}
	working, _, err := m.git.BranchDiff(ctx, wt)
	if err != nil {
		return out, err
	}
	if err := gate(working); err != nil {
		return out, err
	}
	msg, asker, _ := m.opts.Chats.LastPrompt(ctx, rec.ChatID)
	trailers := []string{by.trailer()}
	if asker != "" && asker != by.ID {
		trailers = append(trailers, Person{ID: asker}.trailer())
	}
	committed, err := m.git.Commit(ctx, wt, workspace.CommitOptions{Message: commitMessage(msg), Trailers: trailers})
	if err != nil {
		return out, err
	}
	out.Committed = committed
	head, err := m.git.Import(ctx, wt)
	if err != nil {
		return out, err
	}
	out.Head = head
	if _, out.Stat, err = m.git.ShipDiff(ctx, wt, head); err != nil {
		return out, err
	}
	history, err := m.git.ShipHistory(ctx, wt, head)
	if err != nil {
		return out, err
	}
	return out, gate(history)
}

// commitMessage is a commit's message from the chat's prompt: its first
// line as the subject (at most 72 bytes), the rest as the body.
func commitMessage(prompt string) string {
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return "Work of a Threadline chat"
	}
	subject, body, _ := strings.Cut(prompt, "\n")
	if len(subject) > 72 {
		cut := 72
		for cut > 0 && subject[cut]&0xC0 == 0x80 {
			cut--
		}
		body = strings.TrimSpace(subject[cut:] + "\n" + body)
		subject = subject[:cut] + "…"
	}
	if body = strings.TrimSpace(body); body != "" {
		return subject + "\n\n" + body
	}
	return subject
}

// PROpened is what PR did.
type PROpened struct {
	Pushed
	Number int
	URL    string
	// Updated says the chat's pull request existed and was updated.
	Updated bool
}

// PR pushes the branch and opens its pull request on the project's forge,
// or updates the one it opened before; title "" keeps the first prompt's
// subject. link (the thread's) goes into the body.
func (m *Manager) PR(ctx context.Context, chatID, title string, by Person, link string) (PROpened, error) {
	rec, err := m.record(ctx, chatID)
	if err != nil {
		return PROpened{}, err
	}
	repo, err := m.repoOf(ctx, rec)
	if err != nil {
		return PROpened{}, err
	}
	if repo.Forge == "" {
		return PROpened{}, ErrNoForge
	}
	pushed, err := m.Push(ctx, chatID, by)
	out := PROpened{Pushed: pushed}
	if err != nil {
		return out, err
	}
	_, token, err := m.credentials(ctx, rec, repo)
	if err != nil {
		return out, err
	}
	if token == "" {
		return out, fmt.Errorf("%w: set the project secret FORGE_TOKEN (threadline project secret set %s FORGE_TOKEN)", ErrNoForge, rec.Project)
	}
	remote, err := forge.ParseRemote(repo.Src)
	if err != nil {
		return out, err
	}
	f, err := m.opts.Forge(repo.Forge, repo.ForgeURL, token)
	if err != nil {
		return out, err
	}
	if title == "" {
		msg, _, _ := m.opts.Chats.LastPrompt(ctx, chatID)
		title, _, _ = strings.Cut(commitMessage(msg), "\n")
	}
	body := fmt.Sprintf("Asked by %s in Threadline", by.Name)
	if link != "" {
		body += " ([the thread](" + link + "))"
	}
	body += fmt.Sprintf(".\n\n%s\n\nBranch `%s`, chat `%s`.", pushed.Stat.String(), rec.Branch, chatID)
	info, err := f.EnsurePR(ctx, forge.PR{Owner: remote.Owner, Repo: remote.Repo, Head: rec.Branch, Base: rec.Base, Title: title, Body: body, Number: rec.PRNumber})
	if err != nil {
		return out, err
	}
	out.Number, out.URL, out.Updated = info.Number, info.URL, !info.Opened
	if err := m.opts.Store.SetWorkspacePR(ctx, chatID, info.Number, info.URL); err != nil {
		m.log.Warn("workspace: record the PR", logkey.ChatID, chatID, "err", err)
	}
	return out, nil
}

// Merge commits what the agent left, then lands the branch on its base
// without touching any checkout (agentcore/workspace.Merge); a conflict is
// a *workspace.ConflictError and lands nothing.
func (m *Manager) Merge(ctx context.Context, chatID string, by Person) (workspace.Landed, error) {
	rec, err := m.record(ctx, chatID)
	if err != nil {
		return workspace.Landed{}, err
	}
	repo, err := m.repoOf(ctx, rec)
	if err != nil {
		return workspace.Landed{}, err
	}
	if _, err := m.ship(ctx, rec, by); err != nil {
		return workspace.Landed{}, err
	}
	cred, _, err := m.credentials(ctx, rec, repo)
	if err != nil {
		return workspace.Landed{}, err
	}
	return m.git.Merge(ctx, m.worktree(rec), workspace.MergeOptions{Credential: cred, LocalOnly: rec.Project == ""})
}

// Close removes the chat's workspace; without discard, work that is
// neither pushed nor merged stops it (*workspace.UnpushedError says what).
func (m *Manager) Close(ctx context.Context, chatID string, discard bool) (Record, error) {
	rec, err := m.record(ctx, chatID)
	if err != nil {
		return rec, err
	}
	if err := m.git.Remove(ctx, m.worktree(rec), workspace.RemoveOptions{Discard: discard, Pushed: rec.PushedHead}); err != nil {
		return rec, err
	}
	return rec, m.opts.Store.RemoveWorkspace(ctx, chatID)
}

// GC removes the workspaces of chats idle since before keep ago (none with
// dryRun) and returns them; one whose work is unpushed is kept and
// reported in failed.
func (m *Manager) GC(ctx context.Context, keep time.Duration, dryRun bool) (removed []Record, failed map[string]error, err error) {
	idle, err := m.opts.Store.Workspaces(ctx, Filter{States: []string{StateReady}, UsedBefore: time.Now().Add(-keep)})
	if err != nil {
		return nil, nil, err
	}
	failed = map[string]error{}
	for _, rec := range idle {
		if dryRun {
			removed = append(removed, rec)
			continue
		}
		if _, err := m.Close(ctx, rec.ChatID, false); err != nil {
			failed[rec.ChatID] = err
			continue
		}
		removed = append(removed, rec)
	}
	return removed, failed, nil
}

// List is every workspace in states (none: every state), most recently
// used first.
func (m *Manager) List(ctx context.Context, states ...string) ([]Record, error) {
	return m.opts.Store.Workspaces(ctx, Filter{States: states})
}
