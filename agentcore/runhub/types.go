package runhub

import (
	"context"
	"encoding/json"
	"time"
)

// Run statuses as stored by the run lock. A run is StatusRunning from Acquire until
// Release sets one of the terminal statuses.
const (
	StatusRunning     = "running"
	StatusCompleted   = "completed"
	StatusFailed      = "failed"
	StatusInterrupted = "interrupted"
)

// Event is one persisted chat event. Seq is per chat, starts at 1 and has no gaps
// among committed events.
type Event struct {
	ChatID  string          `json:"chat_id"`
	Seq     int64           `json:"seq"`
	RunID   string          `json:"run_id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	At      time.Time       `json:"at"`
}

// RunRecord is what the hub records when it takes a chat's run lock.
type RunRecord struct {
	ID, ChatID, Agent, Model, Owner, StartedBy string
	StartedAt                                  time.Time
}

// Store is the persistence the hub needs. store.Store implements it.
type Store interface {
	// AppendEvents stores all events or none (one transaction). A duplicate
	// (chat, seq) is an error and leaves nothing of the batch behind.
	AppendEvents(ctx context.Context, events []Event) error
	// EventsAfter returns up to limit events of the chat with seq > afterSeq,
	// ordered by seq.
	EventsAfter(ctx context.Context, chatID string, afterSeq int64, limit int) ([]Event, error)
	// LastSeq returns the highest stored seq of the chat, 0 when it has none.
	LastSeq(ctx context.Context, chatID string) (int64, error)
	// StartRun records a running run. It returns an error wrapping
	// agent.ErrPromptAlreadyRunning when the chat already has one.
	StartRun(ctx context.Context, run RunRecord) error
	// FinishRun moves a run to a terminal status.
	FinishRun(ctx context.Context, runID, status string, usage json.RawMessage, errText string) error
}
