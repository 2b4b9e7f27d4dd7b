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
	// KindQuestion asks the user to fill in Questions: an agent's question
	// (Claude's AskUserQuestion, Codex's requestUserInput) or a form (an MCP
	// server's form elicitation, one Question per field of its schema).
	KindQuestion InteractionKind = "question"
	// KindElicitation is an MCP server's request that is not a form: a URL
	// to open (accept once done) or an MCP tool-call approval.
	KindElicitation InteractionKind = "elicitation"
	KindToolCall    InteractionKind = "tool_call"
	KindUnknown     InteractionKind = "unknown"
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
	// AutoResolveAt, when set, is the deadline the agent itself gave the
	// request (Codex's requestUserInput autoResolutionMs): if no answer
	// arrived by then, the provider answers it natively with no answers (the
	// agent goes on without them) and emits interaction.resolved with status
	// timed_out, By "agent"; an answer before it wins. Front-ends show it
	// ("answers itself in 30 s", or the time). Zero means no deadline from
	// the agent. It is independent of ExpiresAt (the chat's own policy);
	// whichever comes first applies.
	AutoResolveAt time.Time `json:"auto_resolve_at,omitzero"`
}

// SystemAnswerRefused is the Subtype of the system event a provider emits
// when an answer to a pending interaction cannot be encoded for the agent
// (e.g. "abc" for a form's integer field, invalid JSON): nothing is sent,
// the interaction stays pending (no interaction.resolved follows) and can
// be answered again. Text says why, for the user; Interaction carries only
// the ID of the request that is still waiting.
const SystemAnswerRefused = "answer_refused"

// Option is one choice offered for an interaction.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	// Kind is the decision the option stands for.
	Kind Decision `json:"kind,omitempty"`
}

// Question is one question of a KindQuestion interaction. Its answer is
// InteractionResponse.Answers[ID] with DecisionAnswer.
type Question struct {
	ID     string `json:"id"`
	Header string `json:"header,omitempty"`
	Text   string `json:"text"`
	// Options are the choices offered. Without AllowOther the answer must
	// be one of them, verbatim; with no Options the answer is free text.
	Options []string `json:"options,omitempty"`
	// MultiSelect lets the user pick several Options; the answer lists them
	// one per line ("\n" between options).
	MultiSelect bool `json:"multi_select,omitempty"`
	// Secret answers are never shown, logged or stored.
	Secret bool `json:"secret,omitempty"`
	// AllowOther, on a question with Options, also accepts a free-text
	// answer that is none of them (an "Other…" choice next to the options);
	// the answer is then the text as typed. It does not matter without
	// Options.
	AllowOther bool `json:"allow_other,omitempty"`
	// Optional marks a form field the user may leave unanswered: its ID is
	// then absent from Answers (or maps to ""), and the provider leaves the
	// field out of the agent's answer. A question is required otherwise.
	Optional bool `json:"optional,omitempty"`
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
