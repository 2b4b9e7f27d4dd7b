// store.go: the persistence chatops needs (thread bindings, inbound event dedup,
// rendered platform messages). store.Store implements Store.

package chatops

import (
	"context"
	"time"
)

// Place is a thread on a chat platform: the unit a chat is bound to.
type Place struct {
	// Platform is "slack", "matrix" or "console".
	Platform string
	// Workspace is the Slack team id or the Matrix server; empty where the
	// platform has none.
	Workspace string
	// Channel is the Slack channel (or DM) id, the Matrix room id.
	Channel string
	// Thread is the thread root (Slack ts of the first message, Matrix event id).
	Thread string
}

// String renders the place for logs.
func (p Place) String() string {
	return p.Platform + ":" + p.Workspace + "/" + p.Channel + "/" + p.Thread
}

// Binding ties a thread to a chat.
type Binding struct {
	Place
	ChatID    string
	CreatedBy string
	CreatedAt time.Time
}

// RenderedMessage is one platform message a run was rendered into.
type RenderedMessage struct {
	RunID string
	// Slot names the message within the run: "answer/0", "answer/1",
	// "card/<interaction id>", "file".
	Slot   string
	ChatID string
	Place  Place
	// MessageID is the platform's id of the message (Slack ts); empty until posted.
	MessageID string
	// FirstSeq is the seq of the run's first event; LastSeq the newest event
	// the message shows.
	FirstSeq, LastSeq int64
	// Hash identifies the content last sent, so an identical re-render sends nothing.
	Hash string
	// Final is set once the message shows the run's end (or the card's answer).
	Final bool
}

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
