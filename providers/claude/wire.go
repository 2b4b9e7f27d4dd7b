// Wire types of Claude Code's stream-json protocol (2.1.328).

package claude

import (
	"encoding/json"

	"github.com/threadline-bot/threadline/providers/internal/anthropic"
)

// record is one stdout line. Only the fields the parser reads are decoded;
// the rest stay in the raw line for provider.native payloads. decoder
// (decode.go) fills it as json.Unmarshal would: a field added here must be
// added to decoder.record and recordKeys too (TestDecoderMatchesEncodingJSON
// checks that they agree).
type record struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	// APIMessageID is the Anthropic message id of a stream_event line.
	APIMessageID string          `json:"api_message_id"`
	Model        string          `json:"model"`
	Event        *streamEvent    `json:"event"`
	Message      json.RawMessage `json:"message"`

	// system/api_retry
	Attempt      int             `json:"attempt"`
	MaxRetries   int             `json:"max_retries"`
	RetryDelayMS int64           `json:"retry_delay_ms"`
	ErrorStatus  json.RawMessage `json:"error_status"`
	Error        json.RawMessage `json:"error"`
	// system/permission_denied
	ToolName  string `json:"tool_name"`
	ToolUseID string `json:"tool_use_id"`

	// assistant
	IsAPIErrorMessage bool `json:"is_api_error_message"`

	// result
	IsError        bool            `json:"is_error"`
	Result         string          `json:"result"`
	Errors         []string        `json:"errors"`
	APIErrorStatus json.RawMessage `json:"api_error_status"`
	TerminalReason string          `json:"terminal_reason"`
	DurationMS     int64           `json:"duration_ms"`
	NumTurns       int             `json:"num_turns"`
	TotalCostUSD   float64         `json:"total_cost_usd"`
	Usage          *wireUsage      `json:"usage"`

	// control_request / control_cancel_request
	RequestID json.RawMessage `json:"request_id"`
	Request   json.RawMessage `json:"request"`
}

type streamEvent struct {
	Type  string       `json:"type"`
	Delta *streamDelta `json:"delta"`
}

type streamDelta struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Thinking string `json:"thinking"`
}

type wireUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
}

// message is the Anthropic message inside assistant and user lines.
type message struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"` // string or []contentBlock
}

// contentBlock is a message's content block (the Messages API's).
type contentBlock = anthropic.Block

// canUseTool is the request of a can_use_tool control_request.
type canUseTool struct {
	Subtype        string          `json:"subtype"`
	ToolName       string          `json:"tool_name"`
	DisplayName    string          `json:"display_name"`
	Input          json.RawMessage `json:"input"`
	Description    string          `json:"description"`
	BlockedPath    string          `json:"blocked_path"`
	ToolUseID      string          `json:"tool_use_id"`
	DecisionReason string          `json:"decision_reason"`
	// PermissionSuggestions are the CLI's proposed permission updates
	// (addRules, addDirectories, setMode, ...), kept as they came.
	PermissionSuggestions []json.RawMessage `json:"permission_suggestions"`
}

// askInput is AskUserQuestion's input.
type askInput struct {
	Questions []struct {
		Question string `json:"question"`
		Header   string `json:"header"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
		MultiSelect bool `json:"multiSelect"`
	} `json:"questions"`
}

// Host → CLI messages.

type userLine struct {
	Type            string      `json:"type"`
	Message         userMessage `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

type userMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string or []inputBlock
}

type inputBlock struct {
	Type   string       `json:"type"`
	Text   string       `json:"text,omitempty"`
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

type controlRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype string `json:"subtype"`
	} `json:"request"`
}

type controlResponse struct {
	Type     string        `json:"type"`
	Response controlResult `json:"response"`
}

type controlResult struct {
	Subtype   string          `json:"subtype"`
	RequestID json.RawMessage `json:"request_id"`
	Response  any             `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

type permissionResult struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	// UpdatedPermissions are the permission updates the CLI applies with an
	// allow (approve for the session: its suggestions, scoped to the session).
	UpdatedPermissions []json.RawMessage `json:"updatedPermissions,omitempty"`
	Message            string            `json:"message,omitempty"`
	Interrupt          bool              `json:"interrupt,omitempty"`
	ToolUseID          string            `json:"toolUseID,omitempty"`
}

// todoInput is TodoWrite's input: the whole list each time.
type todoInput struct {
	Todos []struct {
		Content    string `json:"content"`
		Status     string `json:"status"`
		ActiveForm string `json:"activeForm"`
	} `json:"todos"`
}

// taskInput is the input of TaskCreate (subject) and TaskUpdate (taskId,
// status, subject), the todo tools of CLAUDE_CODE_ENABLE_TODO_TOOLS=1.
type taskInput struct {
	TaskID  string `json:"taskId"`
	Subject string `json:"subject"`
	Status  string `json:"status"`
}
