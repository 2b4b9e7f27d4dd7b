// adapters.go: the Store seen through the small interfaces its consumers
// declare (chatops.ChatStore and chatops.Feed, prompt.Chats and prompt.Ledger).
package store

import (
	"context"

	"github.com/google/uuid"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
)

// Chats is the Store as chatops.ChatStore and prompt.Chats.
type Chats struct{ St *Store }

var (
	_ chatops.ChatStore = Chats{}
	_ prompt.Chats      = Chats{}
	_ prompt.Ledger     = Ledger{}
	_ chatops.Feed      = Feed{}
)

// CreateChat stores a new chat; an empty id gets a fresh one.
func (c Chats) CreateChat(ctx context.Context, ch chatops.Chat) (chatops.Chat, error) {
	if ch.ID == "" {
		ch.ID = uuid.NewString()
	}
	sc := Chat{ID: ch.ID, Title: ch.Title, Agent: ch.Agent, Model: ch.Model, Effort: ch.Effort, Mode: ch.Mode, Project: ch.Project, Cwd: ch.Cwd}
	if err := c.St.CreateChat(ctx, &sc); err != nil {
		return chatops.Chat{}, err
	}
	return ch, nil
}

// GetChat returns a chat's settings.
func (c Chats) GetChat(ctx context.Context, id string) (chatops.Chat, error) {
	sc, err := c.St.GetChat(ctx, id)
	if err != nil {
		return chatops.Chat{}, err
	}
	return chatops.Chat{ID: sc.ID, Title: sc.Title, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: sc.Mode, Project: sc.Project, Cwd: sc.Cwd}, nil
}

// UpdateChat stores a chat's settings, keeping its sessions.
func (c Chats) UpdateChat(ctx context.Context, ch chatops.Chat) error {
	sc, err := c.St.GetChat(ctx, ch.ID)
	if err != nil {
		return err
	}
	sc.Title, sc.Agent, sc.Model, sc.Effort, sc.Mode, sc.Project, sc.Cwd = ch.Title, ch.Agent, ch.Model, ch.Effort, ch.Mode, ch.Project, ch.Cwd
	return c.St.UpdateChat(ctx, sc)
}

// Chat returns what the prompt service needs of a chat.
func (c Chats) Chat(ctx context.Context, id string) (prompt.Chat, error) {
	sc, err := c.St.GetChat(ctx, id)
	if err != nil {
		return prompt.Chat{}, err
	}
	return prompt.Chat{
		ID: sc.ID, Agent: sc.Agent, Model: sc.Model, Effort: sc.Effort, Mode: agent.Mode(sc.Mode),
		Project: sc.Project, Cwd: sc.Cwd, Sessions: sc.Sessions, ForkPending: sc.ForkPending,
	}, nil
}

// SetSession records a provider's native session of the chat.
func (c Chats) SetSession(ctx context.Context, chatID, provider, sessionID string) error {
	return c.St.SetSession(ctx, chatID, provider, sessionID)
}

// Ledger is the Store as prompt.Ledger.
type Ledger struct{ St *Store }

// RecordInteraction stores a pending interaction.
func (l Ledger) RecordInteraction(ctx context.Context, in prompt.InteractionRecord) error {
	return l.St.CreateInteraction(ctx, Interaction{
		RunID: in.RunID, ID: in.ID, ChatID: in.ChatID, NativeID: in.NativeID, Kind: in.Kind, Payload: in.Payload,
	})
}

// ResolveInteraction stores an interaction's outcome.
func (l Ledger) ResolveInteraction(ctx context.Context, runID, id, status, decision, by string) error {
	return l.St.ResolveInteraction(ctx, runID, id, status, decision, by)
}

// Feed is a run hub over the Store as chatops.Feed.
type Feed struct {
	Hub *runhub.Hub
	St  *Store
}

// Subscribe follows a chat's events after a seq.
func (f Feed) Subscribe(ctx context.Context, chatID string, afterSeq int64) <-chan chatops.Event {
	return f.Hub.Subscribe(ctx, chatID, afterSeq)
}

// LastSeq is the chat's newest persisted seq.
func (f Feed) LastSeq(ctx context.Context, chatID string) (int64, error) {
	return f.St.LastSeq(ctx, chatID)
}
