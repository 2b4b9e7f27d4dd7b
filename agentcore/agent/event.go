// Normalized events emitted by providers.

package agent

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
)

// EventType is the normalized type of an Event.
type EventType string

// Event types.
const (
	EventSessionUpdated EventType = "session.updated"
	EventAssistantDelta EventType = "assistant.delta"
	EventReasoningDelta EventType = "reasoning.delta"
	EventToolStarted    EventType = "tool.started"
	EventToolOutput     EventType = "tool.output"
	EventToolCompleted  EventType = "tool.completed"
	EventUsageUpdated   EventType = "usage.updated"
	// EventPlanUpdated carries the agent's whole current plan (Claude's
	// TodoWrite, Codex's turn/plan/updated, ACP's plan session update): each
	// event replaces the previous plan.
	EventPlanUpdated          EventType = "plan.updated"
	EventInteractionRequested EventType = "interaction.requested"
	EventInteractionResolved  EventType = "interaction.resolved"
	EventSystem               EventType = "system"
	EventRunStarted           EventType = "run.started"
	EventRunCompleted         EventType = "run.completed"
	EventRunFailed            EventType = "run.failed"
	EventRunInterrupted       EventType = "run.interrupted"
	EventProviderNative       EventType = "provider.native"
	// EventImage carries an image the agent made through the CLI's own
	// tools (a Codex image generation, an image block in an MCP tool's
	// result): the core posts it to the chat's thread.
	EventImage EventType = "image"
)

// Terminal reports whether t ends a run.
func (t EventType) Terminal() bool {
	return t == EventRunCompleted || t == EventRunFailed || t == EventRunInterrupted
}

// Event is one normalized provider event. Only the fields that belong to Type are
// set; the JSON form is flat so that it can be persisted and printed as is.
type Event struct {
	Type EventType `json:"type"`
	// Text is the delta on assistant/reasoning deltas, the output chunk on
	// tool.output, the final answer on run.completed (when the CLI reports one)
	// and the human-readable message on system and run.failed.
	Text string `json:"text,omitempty"`
	// Subtype refines system events ("init", "api_retry", "session_recovered", ...).
	Subtype string `json:"subtype,omitempty"`
	// SessionID is the native session on session.updated.
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`

	Tool        *Tool        `json:"tool,omitempty"`
	Plan        *Plan        `json:"plan,omitempty"`
	Usage       *Usage       `json:"usage,omitempty"`
	Interaction *Interaction `json:"interaction,omitempty"`
	Resolution  *Resolution  `json:"resolution,omitempty"`
	// Change is what the turn changed in its chat's own workspace, on a
	// system event of subtype SubtypeWorkspace (emitted by the core before
	// the turn's terminal event, never by a provider).
	Change *Change `json:"change,omitempty"`
	// Image is the image on an image event.
	Image *MadeImage `json:"image,omitempty"`

	// Native keeps the correlation ids and a bounded safe payload of the
	// native record this event came from.
	Native *Native `json:"native,omitempty"`
}

// SubtypeWorkspace is the subtype of the system event carrying a turn's
// Change.
const SubtypeWorkspace = "workspace"

// Change is what a turn changed in its chat's workspace (its own branch).
type Change struct {
	// Branch is the chat's branch.
	Branch string `json:"branch"`
	// Files, Insertions and Deletions are the turn's diff stat.
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
}

// String is the footer's form: "3 files changed, +40 −2 · threadline/x".
func (c Change) String() string {
	files := fmt.Sprintf("%d files changed", c.Files)
	switch c.Files {
	case 0:
		files = "no change"
	case 1:
		files = "1 file changed"
	}
	if c.Files > 0 {
		files += fmt.Sprintf(", +%d \u2212%d", c.Insertions, c.Deletions)
	}
	if c.Branch == "" {
		return files
	}
	return files + " · " + c.Branch
}

// MadeImage is an image the agent made. Its bytes never reach the event's JSON
// (the chat log and the database keep its type, size and tool only): the
// core posts them while the run goes on.
type MadeImage struct {
	// ToolID is the tool call (or native item) that made it.
	ToolID string `json:"tool_id,omitempty"`
	// Name is a file name for it, when the CLI gives one ("" otherwise).
	Name string `json:"name,omitempty"`
	// MediaType is the type the CLI declared ("image/png"); the core
	// checks it against the bytes.
	MediaType string `json:"media_type,omitempty"`
	Size      int    `json:"size"`
	Data      []byte `json:"-"`
}

// MaxImageBytes bounds an image a provider decodes: the most an output
// line of the CLI (16 MiB) can carry in base64.
const MaxImageBytes = 12 << 20

// DecodeImage makes the MadeImage of base64 data (standard or URL alphabet,
// padded or not, or a data: URL) of type mimeType, at most max decoded
// bytes; ok is false when data is not base64 or is larger.
func DecodeImage(toolID, name, mimeType, data string, max int) (*MadeImage, bool) {
	if rest, ok := strings.CutPrefix(data, "data:"); ok {
		head, payload, found := strings.Cut(rest, ",")
		if !found || !strings.HasSuffix(head, ";base64") {
			return nil, false
		}
		if mimeType == "" {
			mimeType = strings.TrimSuffix(head, ";base64")
		}
		data = payload
	}
	if base64.StdEncoding.DecodedLen(len(data)) > max+3 {
		return nil, false
	}
	data = strings.TrimRight(data, "=")
	raw, err := base64.RawStdEncoding.DecodeString(data)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(data); err != nil {
			return nil, false
		}
	}
	if len(raw) == 0 || len(raw) > max {
		return nil, false
	}
	return &MadeImage{ToolID: toolID, Name: name, MediaType: mimeType, Size: len(raw), Data: raw}, true
}

// Tool describes a tool call on tool.started / tool.output / tool.completed.
type Tool struct {
	ID    string          `json:"id"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
	// Summary is a short human line ("Bash: ls -la").
	Summary string `json:"summary,omitempty"`
	Output  string `json:"output,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
}

// PlanStatus is the state of one plan item.
type PlanStatus string

// Plan item states; providers map their native spellings ("inProgress",
// "in_progress", "done", ...) onto these.
const (
	PlanPending    PlanStatus = "pending"
	PlanInProgress PlanStatus = "in_progress"
	PlanCompleted  PlanStatus = "completed"
)

// Plan is the agent's current plan on plan.updated.
type Plan struct {
	// Title is a short heading when the CLI gives one ("" otherwise).
	Title string     `json:"title,omitempty"`
	Items []PlanItem `json:"items"`
}

// PlanItem is one step of a Plan.
type PlanItem struct {
	Text   string     `json:"text"`
	Status PlanStatus `json:"status"`
}

// Usage is token and cost accounting, cumulative for the run.
type Usage struct {
	InputTokens         int64   `json:"input_tokens,omitempty"`
	OutputTokens        int64   `json:"output_tokens,omitempty"`
	CacheReadTokens     int64   `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64   `json:"cache_creation_tokens,omitempty"`
	CostUSD             float64 `json:"cost_usd,omitempty"`
	DurationMS          int64   `json:"duration_ms,omitempty"`
	NumTurns            int     `json:"num_turns,omitempty"`
}

// Native is the envelope of the native record behind an event.
type Native struct {
	Provider ProviderID `json:"provider"`
	// Kind is the native record type or JSON-RPC method.
	Kind string `json:"kind,omitempty"`
	// ID is a native request or item id, kept byte-exact as JSON (7 and "7" differ).
	ID json.RawMessage `json:"id,omitempty"`
	// Payload is a bounded, secret-free copy of the record.
	Payload json.RawMessage `json:"payload,omitempty"`
}
