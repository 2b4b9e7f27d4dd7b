// store.go: the persistence chatops needs (thread bindings, inbound event dedup,
// rendered platform messages). store.Store implements Store.

package chatops

import (
	"context"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/outbox"
)

// Place is a thread on a chat platform: the unit a chat is bound to.
type Place = outbox.Place

// Binding ties a thread to a chat.
type Binding struct {
	Place
	ChatID    agent.ChatID
	CreatedBy string
	CreatedAt time.Time
}

// QueuedPrompt is a message that waits in a thread for its chat's running
// turn to end (the busy queue), with everything it carried.
type QueuedPrompt struct {
	ID     string
	ChatID agent.ChatID
	Place  Place
	// MessageID is the platform message it came in ("" when none).
	MessageID string
	// Sender is the platform-qualified user who wrote it.
	Sender string
	// Text is the prompt as the agent gets it (saved files named in it).
	Text string
	// Files are the names of the files saved for it in the working directory.
	Files  []string
	Images []agent.Image
	// Sent is when the platform received the message (zero when unknown).
	Sent time.Time
	// Queued is when it was queued (set by the store).
	Queued time.Time
}

// RenderedMessage is one platform message a run was rendered into.
type RenderedMessage = outbox.Message

// Store is what chatops persists. Methods must be safe for concurrent use.
type Store interface {
	// Binding returns the binding of the thread; ok is false when there is none.
	Binding(ctx context.Context, p Place) (b Binding, ok bool, err error)
	// Bind stores b unless the thread is already bound, and returns the
	// binding in force; created reports whether b was stored.
	Bind(ctx context.Context, b Binding) (in Binding, created bool, err error)
	// BindingsOfChat returns the threads bound to the chat.
	BindingsOfChat(ctx context.Context, chatID agent.ChatID) ([]Binding, error)
	// FirstSeen records an inbound platform event id and reports whether this
	// is its first sighting (false for retries and duplicates).
	FirstSeen(ctx context.Context, platform, eventID string) (bool, error)
	// PruneSeen forgets event ids seen before t.
	PruneSeen(ctx context.Context, before time.Time) (int64, error)
	// RenderedMessages returns the messages of a run.
	RenderedMessages(ctx context.Context, runID agent.RunID) ([]RenderedMessage, error)
	// SaveRenderedMessage inserts or replaces the row of (RunID, Slot).
	SaveRenderedMessage(ctx context.Context, m RenderedMessage) error
	// OpenRenders returns the platform's messages that do not show their end yet.
	OpenRenders(ctx context.Context, platform string) ([]RenderedMessage, error)
	// EnqueuePrompt appends q to its thread's queue.
	EnqueuePrompt(ctx context.Context, q QueuedPrompt) error
	// QueuedPrompts returns the prompts queued in the platform's threads,
	// each thread's in queue order.
	QueuedPrompts(ctx context.Context, platform string) ([]QueuedPrompt, error)
	// DeleteQueuedPrompt removes a queued prompt (it started or was dropped).
	DeleteQueuedPrompt(ctx context.Context, id string) error
	// ClearQueue removes the thread's queued prompts and returns how many
	// there were.
	ClearQueue(ctx context.Context, p Place) (int, error)
	// QueuePromptFirst moves a queued prompt to the head of its thread's queue.
	QueuePromptFirst(ctx context.Context, p Place, id string) error
}
