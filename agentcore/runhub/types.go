package runhub

import (
	"context"
	"encoding/json"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// RunStatus is a run's status as the run lock stores it. A run is
// StatusRunning from Acquire until Release sets one of the terminal statuses.
type RunStatus string

// The run statuses.
const (
	StatusRunning     RunStatus = "running"
	StatusCompleted   RunStatus = "completed"
	StatusFailed      RunStatus = "failed"
	StatusInterrupted RunStatus = "interrupted"
)

// Terminal reports whether the status ends a run.
func (s RunStatus) Terminal() bool {
	return s == StatusCompleted || s == StatusFailed || s == StatusInterrupted
}

// Event is one persisted chat event. Seq is per chat, starts at 1 and has no gaps
// among committed events.
type Event struct {
	ChatID  agent.ChatID    `json:"chat_id"`
	Seq     int64           `json:"seq"`
	RunID   agent.RunID     `json:"run_id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
	At      time.Time       `json:"at"`
}

// RunRecord is what the hub records when it takes a chat's run lock.
type RunRecord struct {
	ID                             agent.RunID
	ChatID                         agent.ChatID
	Agent, Model, Owner, StartedBy string
	StartedAt                      time.Time
}

// Store is the persistence the hub needs. store.Store implements it.
type Store interface {
	// AppendEvents stores all events or none (one transaction). A duplicate
	// (chat, seq) is an error and leaves nothing of the batch behind.
	AppendEvents(ctx context.Context, events []Event) error
	// EventsAfter returns up to limit events of the chat with seq > afterSeq,
	// ordered by seq.
	EventsAfter(ctx context.Context, chatID agent.ChatID, afterSeq int64, limit int) ([]Event, error)
	// LastSeq returns the highest stored seq of the chat, 0 when it has none.
	LastSeq(ctx context.Context, chatID agent.ChatID) (int64, error)
	// StartRun records a running run. It returns an error wrapping
	// agent.ErrPromptAlreadyRunning when the chat already has one.
	StartRun(ctx context.Context, run RunRecord) error
	// FinishRun moves a run to a terminal status.
	FinishRun(ctx context.Context, runID agent.RunID, status RunStatus, usage json.RawMessage, errText string) error
}

// SeqLoader is implemented by stores that read the last seqs of many chats at
// once: the writer then reloads all the chats of a batch in one query (a
// hundred runs starting together cost one round trip, not a hundred).
type SeqLoader interface {
	// LastSeqs returns the highest stored seq of each chat, 0 when it has none.
	LastSeqs(ctx context.Context, chatIDs []agent.ChatID) (map[agent.ChatID]int64, error)
}
