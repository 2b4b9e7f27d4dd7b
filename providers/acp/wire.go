// Wire types: JSON-RPC 2.0 framing and the ACP v1 shapes the client reads or
// writes (schema: @agentclientprotocol/sdk 2.4.0, schema/v1/schema.json).

package acp

import (
	"encoding/json"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// ProtocolVersion is the ACP protocol version this client speaks.
const ProtocolVersion = 1

// KnownProtocolVersions are the protocol versions the client accepts in the
// agent's initialize answer.
var KnownProtocolVersions = []int{ProtocolVersion}

// JSON-RPC error codes used by the client and seen from agents: the
// standard ones are jsonrpc's, the others ACP's.
const (
	CodeParseError       = jsonrpc.CodeParseError
	CodeInvalidRequest   = jsonrpc.CodeInvalidRequest
	CodeMethodNotFound   = jsonrpc.CodeMethodNotFound
	CodeInvalidParams    = jsonrpc.CodeInvalidParams
	CodeInternalError    = jsonrpc.CodeInternalError
	CodeRequestCancelled = -32800
	CodeAuthRequired     = -32000
	CodeResourceNotFound = -32002
)

// rpcMessage is any JSON-RPC 2.0 message. A request has Method and ID, a
// notification Method only, a response ID and Result or Error. The id stays
// raw so that it is answered byte-exact (7 and "7" differ, 0 is valid).
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// Outgoing request and notification shapes.

type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      int64  `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcNotification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *jsonrpc.Error  `json:"error,omitempty"`
}

// InitializeParams is the client's initialize request.
type InitializeParams struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities ClientCapabilities `json:"clientCapabilities"`
	ClientInfo         Implementation     `json:"clientInfo"`
}

// ClientCapabilities are declared at initialize. Threadline declares no fs
// and no terminal: the agents run on the same host and do their own I/O.
type ClientCapabilities struct {
	FS       FSCapabilities `json:"fs"`
	Terminal bool           `json:"terminal"`
}

// FSCapabilities are the fs/* client methods the agent may call.
type FSCapabilities struct {
	ReadTextFile  bool `json:"readTextFile"`
	WriteTextFile bool `json:"writeTextFile"`
}

// Implementation names a client or agent.
type Implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// initializeResult is the agent's initialize answer (the part read).
type initializeResult struct {
	ProtocolVersion   json.RawMessage `json:"protocolVersion"`
	AgentCapabilities struct {
		LoadSession        bool `json:"loadSession"`
		PromptCapabilities struct {
			Image           bool `json:"image"`
			Audio           bool `json:"audio"`
			EmbeddedContext bool `json:"embeddedContext"`
		} `json:"promptCapabilities"`
		SessionCapabilities map[string]json.RawMessage `json:"sessionCapabilities"`
	} `json:"agentCapabilities"`
	AgentInfo *Implementation `json:"agentInfo"`
}

// sessionParams are the params of session/new and session/load.
type sessionParams struct {
	SessionID  string      `json:"sessionId,omitempty"`
	Cwd        string      `json:"cwd"`
	McpServers []mcpServer `json:"mcpServers"`
}

// mcpServer is a stdio MCP server of session/new and session/load (the
// protocol's McpServerStdio: every agent takes it).
type mcpServer struct {
	Name    string    `json:"name"`
	Command string    `json:"command"`
	Args    []string  `json:"args"`
	Env     []envPair `json:"env"`
}

// envPair is an environment variable of an mcpServer.
type envPair struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// mcpServers are the run's MCP servers (agent.RunRequest.MCPServers) as
// the session's: never nil (the field is required). The values travel on
// the agent's stdin, never on a command line.
func mcpServers(servers []agent.MCPServer) []mcpServer {
	out := make([]mcpServer, 0, len(servers))
	for _, s := range servers {
		m := mcpServer{Name: s.Name, Command: s.Command, Args: s.Args, Env: make([]envPair, 0, len(s.Env))}
		if m.Args == nil {
			m.Args = []string{}
		}
		for _, e := range s.Env {
			m.Env = append(m.Env, envPair{Name: e.Key, Value: e.Value})
		}
		out = append(out, m)
	}
	return out
}

// sessionResult is the part of a session/new or session/load answer read:
// the session id (new only) and the selectors for mode and model.
type sessionResult struct {
	SessionID     string         `json:"sessionId"`
	ConfigOptions []configOption `json:"configOptions"`
	Modes         *struct {
		CurrentModeID  string `json:"currentModeId"`
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
	} `json:"modes"`
	Models *struct {
		CurrentModelID  string `json:"currentModelId"`
		AvailableModels []struct {
			ModelID string `json:"modelId"`
			Name    string `json:"name"`
		} `json:"availableModels"`
	} `json:"models"`
}

type configOption struct {
	ID           string `json:"id"`
	Category     string `json:"category"`
	CurrentValue string `json:"currentValue"`
	Options      []struct {
		Value string `json:"value"`
		Name  string `json:"name"`
	} `json:"options"`
}

// ContentBlock is a prompt content block (text or image).
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

type promptParams struct {
	SessionID string         `json:"sessionId"`
	Prompt    []ContentBlock `json:"prompt"`
}

type sessionIDParams struct {
	SessionID string `json:"sessionId"`
}

// promptResult is the session/prompt answer.
type promptResult struct {
	StopReason string     `json:"stopReason"`
	Usage      *wireUsage `json:"usage"`
	Meta       struct {
		Quota *struct {
			TokenCount struct {
				InputTokens  int64 `json:"input_tokens"`
				OutputTokens int64 `json:"output_tokens"`
			} `json:"token_count"`
		} `json:"quota"`
	} `json:"_meta"`
}

// wireUsage is the unstable PromptResponse.usage (opencode) and qwen's
// _meta.usage on agent_message_chunk.
type wireUsage struct {
	InputTokens       int64 `json:"inputTokens"`
	OutputTokens      int64 `json:"outputTokens"`
	TotalTokens       int64 `json:"totalTokens"`
	ThoughtTokens     int64 `json:"thoughtTokens"`
	CachedReadTokens  int64 `json:"cachedReadTokens"`
	CachedWriteTokens int64 `json:"cachedWriteTokens"`
}

// inMessage is a message from the agent decoded in one pass: the params of
// every method the client handles share one struct (session/update,
// session/request_permission, fs/*, $/cancel_request), so a line is
// validated and decoded once.
type inMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params inParams        `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *jsonrpc.Error  `json:"error"`
}

func (m *inMessage) hasID() bool { return jsonrpc.HasID(m.ID) }

// inParams is the union of the params the client reads.
type inParams struct {
	SessionID string `json:"sessionId"`
	// session/update
	Update *sessionUpdate `json:"update"`
	// session/request_permission
	ToolCall *sessionUpdate     `json:"toolCall"`
	Options  []PermissionOption `json:"options"`
	// fs/read_text_file, fs/write_text_file
	Path    string `json:"path"`
	Content string `json:"content"`
	Line    int    `json:"line"`
	Limit   int    `json:"limit"`
	// $/cancel_request
	RequestID json.RawMessage `json:"requestId"`
}

// sessionUpdate is one session/update payload; which fields are set depends
// on SessionUpdate.
type sessionUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	// Content is a ContentBlock on *_message_chunk and agent_thought_chunk,
	// a []toolCallContent on tool_call and tool_call_update.
	Content json.RawMessage `json:"content"`
	// block is Content decoded as a ContentBlock when the decoder's fast
	// path did so with the line (hasBlock), as json.Unmarshal would.
	block     ContentBlock
	hasBlock  bool
	MessageID string `json:"messageId"`
	// tool_call, tool_call_update
	toolCallFields
	// plan
	Entries []planEntry `json:"entries"`
	// usage_update
	Used int64 `json:"used"`
	Size int64 `json:"size"`
	Cost *struct {
		Amount   float64 `json:"amount"`
		Currency string  `json:"currency"`
	} `json:"cost"`
	// notice
	Severity    string      `json:"severity"`
	Description string      `json:"description"`
	Meta        *updateMeta `json:"_meta"`
}

// updateMeta is a session/update payload's _meta (qwen's usage on chunks,
// tool names; qwen's available_commands_update carries its skill list here).
type updateMeta struct {
	Usage      *wireUsage `json:"usage"`
	ToolName   string     `json:"toolName"`
	DurationMS int64      `json:"durationMs"`
}

// toolCallFields are the ToolCall / ToolCallUpdate fields.
type toolCallFields struct {
	ToolCallID string          `json:"toolCallId"`
	Title      *string         `json:"title"`
	Kind       string          `json:"kind"`
	Status     string          `json:"status"`
	RawInput   json.RawMessage `json:"rawInput"`
	RawOutput  json.RawMessage `json:"rawOutput"`
	Locations  []struct {
		Path string `json:"path"`
		Line int    `json:"line"`
	} `json:"locations"`
}

type planEntry struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// toolCallContent is one element of a tool call's content.
type toolCallContent struct {
	Type    string `json:"type"` // content, diff, terminal
	Content *struct {
		Type string `json:"type"`
		Text string `json:"text"`
		// An image block's base64 data and type.
		Data     string `json:"data"`
		MimeType string `json:"mimeType"`
	} `json:"content"`
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// PermissionOption is one choice of a permission request.
type PermissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

// ACP permission option kinds.
const (
	KindAllowOnce    = "allow_once"
	KindAllowAlways  = "allow_always"
	KindRejectOnce   = "reject_once"
	KindRejectAlways = "reject_always"
)

// permissionOutcome is the result of a session/request_permission.
type permissionOutcome struct {
	Outcome outcome `json:"outcome"`
}

type outcome struct {
	Outcome  string `json:"outcome"` // "selected" or "cancelled"
	OptionID string `json:"optionId,omitempty"`
}
