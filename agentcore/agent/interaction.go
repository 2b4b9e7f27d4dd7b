// Server-initiated interactions: approvals and questions.

package agent

import (
	"encoding/json"
	"time"
)

// InteractionKind classifies a request from the agent to its user.
type InteractionKind string

// Interaction kinds.
const (
	KindCommandApproval    InteractionKind = "command_approval"
	KindFileChangeApproval InteractionKind = "file_change_approval"
	KindPermission         InteractionKind = "permission"
	KindQuestion           InteractionKind = "question"
	KindElicitation        InteractionKind = "elicitation"
	KindToolCall           InteractionKind = "tool_call"
	KindUnknown            InteractionKind = "unknown"
)

// Interaction is a pending request from the agent, emitted on interaction.requested.
type Interaction struct {
	// ID is Threadline's id for the request, unique within the run.
	ID string `json:"id"`
	// NativeID is the protocol's request id as compact JSON, byte-exact.
	NativeID json.RawMessage `json:"native_id"`
	Kind     InteractionKind `json:"kind"`
	Title    string          `json:"title,omitempty"`
	Command  string          `json:"command,omitempty"`
	Cwd      string          `json:"cwd,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Diff     string          `json:"diff,omitempty"`
	Options  []Option        `json:"options,omitempty"`
	// Questions are set on KindQuestion.
	Questions []Question `json:"questions,omitempty"`
	// Payload is the bounded native request.
	Payload json.RawMessage `json:"payload,omitempty"`
	// ExpiresAt is set by the prompt service when the chat's policy declines
	// unanswered requests; zero means the run waits for an answer.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Option is one choice offered for an interaction.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Kind is the decision the option stands for.
	Kind Decision `json:"kind,omitempty"`
}

// Question is one question of a KindQuestion interaction.
type Question struct {
	ID          string   `json:"id"`
	Header      string   `json:"header,omitempty"`
	Text        string   `json:"text"`
	Options     []string `json:"options,omitempty"`
	MultiSelect bool     `json:"multi_select,omitempty"`
	Secret      bool     `json:"secret,omitempty"`
}

// Decision is the user's answer to an approval.
type Decision string

// Decisions.
const (
	DecisionApprove        Decision = "approve"
	DecisionApproveSession Decision = "approve_session"
	DecisionDecline        Decision = "decline"
	DecisionCancel         Decision = "cancel"
	DecisionAnswer         Decision = "answer"
)

// InteractionResponse is a user's answer routed to the run that asked.
type InteractionResponse struct {
	InteractionID string   `json:"interaction_id"`
	Decision      Decision `json:"decision"`
	OptionID      string   `json:"option_id,omitempty"`
	// Answers maps question ids to answers, for KindQuestion.
	Answers map[string]string `json:"-"`
	Secret  bool              `json:"secret,omitempty"`
	By      string            `json:"by,omitempty"`
}

// Interaction statuses carried by Resolution.Status.
const (
	StatusApproved           = "approved"
	StatusApprovedForSession = "approved_for_session"
	StatusDeclined           = "declined"
	StatusCancelled          = "cancelled"
	StatusAnswered           = "answered"
	StatusTurnEnded          = "turn_ended"
	StatusTimedOut           = "timed_out"
	StatusExpired            = "expired"
)

// Resolution is emitted on interaction.resolved. It never carries answer values.
type Resolution struct {
	InteractionID string   `json:"interaction_id"`
	Status        string   `json:"status"`
	Decision      Decision `json:"decision,omitempty"`
	By            string   `json:"by,omitempty"`
}
