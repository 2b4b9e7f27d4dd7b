package worktrees

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/workspace"
)

// Wrap returns providers whose host runs work in their chat's workspace
// (see the package documentation); project runs in a container are left
// as they are.
func (m *Manager) Wrap(providers []agent.Provider) []agent.Provider {
	out := make([]agent.Provider, len(providers))
	for i, p := range providers {
		out[i] = &provider{Provider: p, m: m}
	}
	return out
}

// provider runs a provider's turns in their chat's workspace.
type provider struct {
	agent.Provider
	m *Manager
}

// Run readies the chat's workspace, runs the turn in it and, before the
// turn's terminal event, emits what the turn changed.
func (p *provider) Run(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
	if req.Container != nil || req.ChatID == "" {
		return p.Provider.Run(ctx, req, emit)
	}
	notify := func(text string) { emit(agent.Event{Type: agent.EventSystem, Subtype: "workspace_setup", Text: text}) }
	rec, err := p.m.prepare(ctx, req, notify)
	if err != nil {
		emit(agent.Event{Type: agent.EventRunFailed, Text: "Workspace: " + err.Error()})
		return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
	}
	if rec == nil {
		if err := p.m.forkCopy(ctx, req); err != nil {
			emit(agent.Event{Type: agent.EventRunFailed, Text: "Workspace: " + err.Error()})
			return fmt.Errorf("%w: %w", agent.ErrRunFailed, err)
		}
		unlock, err := p.m.lockDir(ctx, req, emit)
		if err != nil {
			return err
		}
		defer unlock()
		return p.Provider.Run(ctx, req, emit)
	}
	req.Cwd = rec.Path
	req.ReadOnly = append(req.ReadOnly, rec.RepoDir)
	wt := p.m.worktree(*rec)
	before, err := p.m.git.Snapshot(ctx, wt)
	if err != nil {
		p.m.log.Warn("workspace: snapshot before the turn", logkey.ChatID, req.ChatID, "err", err)
	} else {
		_ = p.m.opts.Store.SetWorkspaceTurnTree(ctx, req.ChatID, string(before))
	}
	var once sync.Once
	return p.Provider.Run(ctx, req, func(ev agent.Event) {
		if ev.Type.Terminal() {
			once.Do(func() {
				if c, ok := p.m.turnChange(context.WithoutCancel(ctx), wt, rec, before); ok {
					emit(agent.Event{Type: agent.EventSystem, Subtype: agent.SubtypeWorkspace, Change: &c})
				}
			})
		}
		emit(ev)
	})
}

// turnChange is what the turn changed in wt since before.
func (m *Manager) turnChange(ctx context.Context, wt workspace.Worktree, rec *Record, before workspace.Tree) (agent.Change, bool) {
	if before == "" {
		return agent.Change{}, false
	}
	after, err := m.git.Snapshot(ctx, wt)
	if err != nil {
		m.log.Warn("workspace: snapshot after the turn", logkey.ChatID, rec.ChatID, "err", err)
		return agent.Change{}, false
	}
	st, err := m.git.Stat(ctx, wt, before, after)
	if err != nil {
		m.log.Warn("workspace: the turn's stat", logkey.ChatID, rec.ChatID, "err", err)
		return agent.Change{}, false
	}
	return agent.Change{Branch: rec.Branch, Files: st.Files, Insertions: st.Insertions, Deletions: st.Deletions}, true
}

// forkCopy gives a fork whose parent has no workspace (its own directory
// is no repository) a copy of its parent's directory on its first run, so
// that the fork never edits the parent's files.
func (m *Manager) forkCopy(ctx context.Context, req agent.RunRequest) error {
	parent, err := m.opts.Chats.ForkedFrom(ctx, req.ChatID)
	if err != nil || parent == "" || req.Cwd == "" || filepath.Base(req.Cwd) != req.ChatID {
		return err
	}
	from := filepath.Join(filepath.Dir(req.Cwd), parent)
	if _, err := os.Stat(from); err != nil {
		return nil // the parent never ran: nothing to copy
	}
	if ents, err := os.ReadDir(req.Cwd); err == nil && len(ents) > 0 {
		return nil // copied before (or the fork has worked since)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return m.opts.Agents.Copy(ctx, req.ChatID, from, req.Cwd)
}

// lockDir lets one run at a time work in a directory that chats share (a
// channel's workdir with worktrees off): a second waits, and says so, until
// the first ends or its own ctx does (an interrupted queued run gives up).
func (m *Manager) lockDir(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) (func(), error) {
	if req.Cwd == "" || filepath.Base(req.Cwd) == req.ChatID {
		return func() {}, nil
	}
	v, _ := m.dirs.LoadOrStore(filepath.Clean(req.Cwd), make(chan struct{}, 1))
	slot := v.(chan struct{})
	select {
	case slot <- struct{}{}:
	default:
		emit(agent.Event{Type: agent.EventSystem, Subtype: "workspace_wait", Text: "Waiting: another chat's turn is working in " + req.Cwd + "."})
		select {
		case slot <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return func() { <-slot }, nil
}
