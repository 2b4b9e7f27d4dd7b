// store.go: the persistence chatops needs (thread bindings, inbound event dedup,
// rendered platform messages). store.Store implements Store.

package chatops

import (
	"context"
	"time"

	"github.com/threadline-bot/threadline/chatops/outbox"
)

// Place is a thread on a chat platform: the unit a chat is bound to.
type Place = outbox.Place

// Binding ties a thread to a chat.
type Binding struct {
	Place
	ChatID    string
	CreatedBy string
	CreatedAt time.Time
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
	BindingsOfChat(ctx context.Context, chatID string) ([]Binding, error)
	// FirstSeen records an inbound platform event id and reports whether this
	// is its first sighting (false for retries and duplicates).
	FirstSeen(ctx context.Context, platform, eventID string) (bool, error)
	// PruneSeen forgets event ids seen before t.
	PruneSeen(ctx context.Context, before time.Time) (int64, error)
	// RenderedMessages returns the messages of a run.
	RenderedMessages(ctx context.Context, runID string) ([]RenderedMessage, error)
	// SaveRenderedMessage inserts or replaces the row of (RunID, Slot).
	SaveRenderedMessage(ctx context.Context, m RenderedMessage) error
	// OpenRenders returns the platform's messages that do not show their end yet.
	OpenRenders(ctx context.Context, platform string) ([]RenderedMessage, error)
	// ForkChat copies chat fromID (settings and native sessions) as newID with
	// its next run forking the native session.
	ForkChat(ctx context.Context, fromID, newID string) error
}
