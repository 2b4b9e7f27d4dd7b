// home.go: the threads a person's home page lists (chatops.HomeStore).

package chatstore

import (
	"context"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
)

var _ chatops.HomeStore = Store{}

// HomeThreads returns the threads of the workspace by started runs in
// (store.Store.HomeThreads).
func (s Store) HomeThreads(ctx context.Context, platform, workspace, by string, limit int) ([]chatops.HomeThread, error) {
	rows, err := s.St.HomeThreads(ctx, platform, workspace, by, limit)
	if err != nil {
		return nil, err
	}
	out := make([]chatops.HomeThread, len(rows))
	for i, r := range rows {
		out[i] = chatops.HomeThread{
			Place:  chatops.Place{Platform: r.Platform, Workspace: r.Workspace, Channel: r.Channel, Thread: r.Thread},
			ChatID: agent.ChatID(r.ChatID), Title: r.Title, Status: string(r.Status), Started: r.StartedAt, Ended: r.EndedAt,
		}
	}
	return out, nil
}

// ThreadStarters returns who started runs in the chat bound to p
// (store.Store.ThreadStarters).
func (s Store) ThreadStarters(ctx context.Context, p chatops.Place, limit int) ([]string, error) {
	return s.St.ThreadStarters(ctx, threadRef(p), limit)
}
