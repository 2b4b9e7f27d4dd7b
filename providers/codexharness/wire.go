// Wire types: the subset of the app-server schema (codex-cli 0.169.0) the
// harness reads. Unknown fields are ignored, never rejected.

package codexharness

import "encoding/json"

// threadResult is the result of thread/start, thread/resume and thread/fork.
type threadResult struct {
	Thread struct {
		ID           string `json:"id"`
		Model        string `json:"model"`
		ForkedFromID string `json:"forkedFromId"`
	} `json:"thread"`
	Model         string `json:"model"`
	ModelProvider string `json:"modelProvider"`
}

// turnResult is the result of turn/start.
type turnResult struct {
	Turn wireTurn `json:"turn"`
}

type wireTurn struct {
	ID         string            `json:"id"`
	Status     string            `json:"status"`
	Error      *turnError        `json:"error"`
	Items      []json.RawMessage `json:"items"`
	DurationMs *int64            `json:"durationMs"`
}

type turnError struct {
	Message           string          `json:"message"`
	CodexErrorInfo    json.RawMessage `json:"codexErrorInfo"`
	AdditionalDetails *string         `json:"additionalDetails"`
}

// scope is the thread/turn correlation most notifications carry.
type scope struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
}

type threadStartedParams struct {
	Thread threadRef `json:"thread"`
}

// threadRef is the thread of thread/started.
type threadRef struct {
	ID    string `json:"id"`
	Model string `json:"model"`
}

type turnParams struct {
	ThreadID string   `json:"threadId"`
	Turn     wireTurn `json:"turn"`
}

type itemParams struct {
	ThreadID string   `json:"threadId"`
	TurnID   string   `json:"turnId"`
	Item     wireItem `json:"item"`
}

type deltaParams struct {
	ThreadID     string `json:"threadId"`
	TurnID       string `json:"turnId"`
	ItemID       string `json:"itemId"`
	Delta        string `json:"delta"`
	SummaryIndex int    `json:"summaryIndex"`
	Message      string `json:"message"` // item/mcpToolCall/progress
}

type errorParams struct {
	ThreadID  string    `json:"threadId"`
	TurnID    string    `json:"turnId"`
	Error     turnError `json:"error"`
	WillRetry bool      `json:"willRetry"`
}

type warningParams struct {
	ThreadID string  `json:"threadId"`
	Message  string  `json:"message"`
	Summary  string  `json:"summary"`
	Details  *string `json:"details"`
}

type tokenUsageParams struct {
	ThreadID   string     `json:"threadId"`
	TurnID     string     `json:"turnId"`
	TokenUsage tokenUsage `json:"tokenUsage"`
}

type tokenUsage struct {
	Total tokenBreakdown `json:"total"`
	Last  tokenBreakdown `json:"last"`
}

type tokenBreakdown struct {
	TotalTokens           int64 `json:"totalTokens"`
	InputTokens           int64 `json:"inputTokens"`
	CachedInputTokens     int64 `json:"cachedInputTokens"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	ReasoningOutputTokens int64 `json:"reasoningOutputTokens"`
}

// planParams is turn/plan/updated.
type planParams struct {
	ThreadID    string     `json:"threadId"`
	TurnID      string     `json:"turnId"`
	Explanation *string    `json:"explanation"`
	Plan        []planStep `json:"plan"`
}

type planStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

type resolvedParams struct {
	ThreadID  string          `json:"threadId"`
	RequestID json.RawMessage `json:"requestId"`
}

type modelReroutedParams struct {
	FromModel string `json:"fromModel"`
	ToModel   string `json:"toModel"`
	Reason    string `json:"reason"`
}

// wireItem is a ThreadItem; which fields are set depends on Type.
type wireItem struct {
	Type string `json:"type"`
	ID   string `json:"id"`

	// agentMessage, plan
	Text string `json:"text"`
	// reasoning
	Summary []string `json:"summary"`
	// reasoning: []string; userMessage: content blocks
	Content json.RawMessage `json:"content"`

	// commandExecution
	Command          string          `json:"command"`
	Cwd              string          `json:"cwd"`
	CommandActions   []commandAction `json:"commandActions"`
	AggregatedOutput *string         `json:"aggregatedOutput"`
	ExitCode         *int            `json:"exitCode"`
	Status           string          `json:"status"`

	// fileChange
	Changes []fileChange `json:"changes"`

	// mcpToolCall, dynamicToolCall, collabAgentToolCall
	Server       string                    `json:"server"`
	Tool         string                    `json:"tool"`
	Namespace    *string                   `json:"namespace"`
	Arguments    json.RawMessage           `json:"arguments"`
	Result       *mcpResult                `json:"result"`
	Error        *struct{ Message string } `json:"error"`
	ContentItems []contentItem             `json:"contentItems"`
	Success      *bool                     `json:"success"`

	// webSearch
	Query string `json:"query"`

	// collabAgentToolCall
	SenderThreadID    string                      `json:"senderThreadId"`
	ReceiverThreadIDs []string                    `json:"receiverThreadIds"`
	Prompt            *string                     `json:"prompt"`
	Model             *string                     `json:"model"`
	AgentsStates      map[string]collabAgentState `json:"agentsStates"`
}

type commandAction struct {
	Type    string `json:"type"`
	Command string `json:"command"`
}

type fileChange struct {
	Path string `json:"path"`
	Kind struct {
		Type     string  `json:"type"`
		MovePath *string `json:"move_path"`
	} `json:"kind"`
	Diff string `json:"diff"`
}

// mcpResult is an item's result: an MCP tool call's content blocks, or
// an image generation's inline image (a base64 string).
type mcpResult struct {
	Content []contentItem `json:"content"`
	// Inline is a string result: imageGeneration's base64 image.
	Inline string `json:"-"`
}

func (r *mcpResult) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &r.Inline)
	}
	type plain mcpResult
	return json.Unmarshal(b, (*plain)(r))
}

// contentItem is an MCP content block or a dynamic tool output item.
type contentItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
	// An MCP image block's base64 data and type; a dynamic tool's
	// inputImage URL (a data: URL when it is inline).
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	ImageURL string `json:"imageUrl"`
}

type collabAgentState struct {
	Status  string  `json:"status"`
	Message *string `json:"message"`
}

// Server → client request params.

type commandApprovalParams struct {
	scope
	ItemID                 string          `json:"itemId"`
	Kind                   string          `json:"kind"`
	Command                json.RawMessage `json:"command"`
	Cwd                    string          `json:"cwd"`
	Reason                 *string         `json:"reason"`
	NetworkApprovalContext json.RawMessage `json:"networkApprovalContext"`
	CommandActions         []commandAction `json:"commandActions"`
}

type fileChangeApprovalParams struct {
	scope
	ItemID    string  `json:"itemId"`
	Reason    *string `json:"reason"`
	GrantRoot *string `json:"grantRoot"`
}

type userInputParams struct {
	scope
	ItemID string `json:"itemId"`
	// AutoResolutionMs (deprecated in the schema, still honoured) is the
	// agent's own deadline for an answer.
	AutoResolutionMs *uint64 `json:"autoResolutionMs"`
	Questions        []struct {
		ID       string `json:"id"`
		Header   string `json:"header"`
		Question string `json:"question"`
		IsOther  bool   `json:"isOther"`
		IsSecret bool   `json:"isSecret"`
		Options  []struct {
			Label       string `json:"label"`
			Description string `json:"description"`
		} `json:"options"`
	} `json:"questions"`
}

type elicitationParams struct {
	scope
	ServerName      string          `json:"serverName"`
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	URL             string          `json:"url"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
	Meta            *struct {
		ApprovalKind string          `json:"codex_approval_kind"`
		Persist      []string        `json:"persist"`
		ToolName     string          `json:"tool_name"`
		ToolParams   json.RawMessage `json:"tool_params"`
	} `json:"_meta"`
}

type permissionsParams struct {
	scope
	ItemID      string          `json:"itemId"`
	Cwd         string          `json:"cwd"`
	Reason      *string         `json:"reason"`
	Permissions json.RawMessage `json:"permissions"`
}

type toolCallParams struct {
	scope
	CallID    string          `json:"callId"`
	Namespace *string         `json:"namespace"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// Legacy API (applyPatchApproval, execCommandApproval).

type execCommandApprovalParams struct {
	ConversationID string   `json:"conversationId"`
	CallID         string   `json:"callId"`
	Command        []string `json:"command"`
	Cwd            string   `json:"cwd"`
	Reason         *string  `json:"reason"`
	ParsedCmd      []struct {
		Cmd string `json:"cmd"`
	} `json:"parsedCmd"`
}

type applyPatchApprovalParams struct {
	ConversationID string                      `json:"conversationId"`
	CallID         string                      `json:"callId"`
	FileChanges    map[string]legacyFileChange `json:"fileChanges"`
	Reason         *string                     `json:"reason"`
	GrantRoot      *string                     `json:"grantRoot"`
}

// legacyFileChange is one FileChange of applyPatchApproval: add or delete
// carry the content, update a unified diff.
type legacyFileChange struct {
	Type        string  `json:"type"`
	Content     string  `json:"content"`
	UnifiedDiff string  `json:"unified_diff"`
	MovePath    *string `json:"move_path"`
}

func (v *deltaParams) thread() string      { return v.ThreadID }
func (v *itemParams) thread() string       { return v.ThreadID }
func (v *tokenUsageParams) thread() string { return v.ThreadID }
func (v *errorParams) thread() string      { return v.ThreadID }
func (v *warningParams) thread() string    { return v.ThreadID }
func (v *planParams) thread() string       { return v.ThreadID }
func (v *turnParams) thread() string       { return v.ThreadID }
