// Package wsstore is the store as agentcore/worktrees' Store, Projects and
// Chats: the workspaces table, the projects' repositories and secrets, and
// what the workspaces read of a chat.
package wsstore

import (
	"context"
	"errors"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/worktrees"
	"github.com/threadline-bot/threadline/store"
)

// Store is the store as worktrees.Store, Projects and Chats.
type Store struct{ St *store.Store }

var (
	_ worktrees.Store    = Store{}
	_ worktrees.Projects = Store{}
	_ worktrees.Chats    = Store{}
)

// notFound joins worktrees.ErrNotFound to the store's.
func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return errors.Join(err, worktrees.ErrNotFound)
	}
	return err
}

// ClaimWorkspace is store.ClaimWorkspace.
func (s Store) ClaimWorkspace(ctx context.Context, w worktrees.Record, staleAfter time.Duration) (worktrees.Record, bool, error) {
	ws, claimed, err := s.St.ClaimWorkspace(ctx, store.Workspace(w), staleAfter)
	return worktrees.Record(ws), claimed, err
}

// TouchClaim is store.TouchClaim.
func (s Store) TouchClaim(ctx context.Context, chatID, owner string) error {
	return notFound(s.St.TouchClaim(ctx, chatID, owner))
}

// WorkspaceReady is store.WorkspaceReady.
func (s Store) WorkspaceReady(ctx context.Context, chatID, path, branch string) error {
	return notFound(s.St.WorkspaceReady(ctx, chatID, path, branch))
}

// WorkspaceFailed is store.WorkspaceFailed.
func (s Store) WorkspaceFailed(ctx context.Context, chatID, errText string) error {
	return notFound(s.St.WorkspaceFailed(ctx, chatID, errText))
}

// Workspace is store.Workspace.
func (s Store) Workspace(ctx context.Context, chatID string) (worktrees.Record, error) {
	ws, err := s.St.Workspace(ctx, chatID)
	return worktrees.Record(ws), notFound(err)
}

// Workspaces is store.Workspaces.
func (s Store) Workspaces(ctx context.Context, f worktrees.Filter) ([]worktrees.Record, error) {
	rows, err := s.St.Workspaces(ctx, store.WorkspaceFilter(f))
	out := make([]worktrees.Record, len(rows))
	for i, r := range rows {
		out[i] = worktrees.Record(r)
	}
	return out, err
}

// TouchWorkspace is store.TouchWorkspace.
func (s Store) TouchWorkspace(ctx context.Context, chatID string, at time.Time) error {
	return notFound(s.St.TouchWorkspace(ctx, chatID, at))
}

// SetWorkspaceTurnTree is store.SetWorkspaceTurnTree.
func (s Store) SetWorkspaceTurnTree(ctx context.Context, chatID, tree string) error {
	return notFound(s.St.SetWorkspaceTurnTree(ctx, chatID, tree))
}

// SetWorkspacePR is store.SetWorkspacePR.
func (s Store) SetWorkspacePR(ctx context.Context, chatID string, number int, url string) error {
	return notFound(s.St.SetWorkspacePR(ctx, chatID, number, url))
}

// SetWorkspacePushed is store.SetWorkspacePushed.
func (s Store) SetWorkspacePushed(ctx context.Context, chatID, head string) error {
	return notFound(s.St.SetWorkspacePushed(ctx, chatID, head))
}

// RemoveWorkspace is store.RemoveWorkspace.
func (s Store) RemoveWorkspace(ctx context.Context, chatID string) error {
	return notFound(s.St.RemoveWorkspace(ctx, chatID))
}

// Repo is the project's repository; ok is false for an unknown project or
// one without a repository.
func (s Store) Repo(ctx context.Context, project string) (worktrees.Repo, bool, error) {
	p, err := s.St.GetProject(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		return worktrees.Repo{}, false, nil
	}
	if err != nil || p.Repo == "" {
		return worktrees.Repo{}, false, err
	}
	return worktrees.Repo{Project: p.Name, Src: p.Repo, Base: p.Base, Setup: p.Setup, Forge: p.Forge, ForgeURL: p.ForgeURL, CloneDir: p.CloneDir}, true, nil
}

// SetCloneDir is store.SetProjectCloneDir.
func (s Store) SetCloneDir(ctx context.Context, project, dir string) error {
	return s.St.SetProjectCloneDir(ctx, project, dir)
}

// Secrets are the project's secrets by name.
func (s Store) Secrets(ctx context.Context, project string) (map[string]string, error) {
	list, err := s.St.ProjectSecrets(ctx, project)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(list))
	for _, sec := range list {
		out[sec.Name] = sec.Value
	}
	return out, nil
}

// ForkedFrom is the chat's parent ("" for none).
func (s Store) ForkedFrom(ctx context.Context, chatID string) (string, error) {
	c, err := s.St.GetChat(ctx, chatID)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	return c.ForkedFrom, err
}

// lastPromptScan bounds how far back LastPrompt looks.
const lastPromptScan = 500

// LastPrompt is the chat's latest user prompt and who sent it.
func (s Store) LastPrompt(ctx context.Context, chatID string) (string, string, error) {
	last, err := s.St.LastSeq(ctx, agent.ChatID(chatID))
	if err != nil {
		return "", "", err
	}
	evs, err := s.St.EventsBefore(ctx, agent.ChatID(chatID), last+1, lastPromptScan)
	if err != nil {
		return "", "", err
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Type != chatlog.TypeUserMessage {
			continue
		}
		en, err := chatlog.Decode(evs[i].Type, []byte(evs[i].Payload))
		if err == nil && en.User != nil {
			return en.User.Text, en.User.By, nil
		}
	}
	return "", "", nil
}
