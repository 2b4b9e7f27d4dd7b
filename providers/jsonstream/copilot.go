// GitHub Copilot CLI `--output-format json` events → agent.Events.

package jsonstream

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// CopilotProviderID is the copilot provider's id.
const CopilotProviderID agent.ProviderID = "copilot"

type copilotEvent struct {
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
	SessionID string          `json:"sessionId"`
	ExitCode  *int            `json:"exitCode"`
	Success   *bool           `json:"success"`
	Usage     *struct {
		SessionDurationMS int64 `json:"sessionDurationMs"`
	} `json:"usage"`
}

type copilotData struct {
	MessageID     string          `json:"messageId"`
	ReasoningID   string          `json:"reasoningId"`
	DeltaContent  string          `json:"deltaContent"`
	Content       string          `json:"content"`
	Model         string          `json:"model"`
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	Arguments     json.RawMessage `json:"arguments"`
	Success       *bool           `json:"success"`
	Result        json.RawMessage `json:"result"`
	Error         json.RawMessage `json:"error"`
	PartialOutput string          `json:"partialOutput"`
	InputTokens   int64           `json:"inputTokens"`
	OutputTokens  int64           `json:"outputTokens"`
	CacheRead     int64           `json:"cacheReadTokens"`
	CacheWrite    int64           `json:"cacheWriteTokens"`
	ErrorType     string          `json:"errorType"`
	Message       string          `json:"message"`
}

// copilotNoise are event types with nothing to show.
var copilotNoise = map[string]bool{
	"session.mcp_server_status_changed": true, "session.mcp_servers_loaded": true,
	"session.skills_loaded": true, "session.tools_updated": true, "session.info": true,
	"user.message": true, "assistant.turn_start": true, "assistant.turn_end": true,
	"assistant.message_start": true, "session.task_complete": true,
	// Seen from the real CLI (1.0.102): its model calls, the tool call's
	// streamed arguments (the call itself comes as tool.execution_start)
	// and bookkeeping.
	"model.call_start": true, "model.call_finished": true, "model.call_final_result": true,
	"assistant.tool_call_delta": true, "assistant.idle": true, "session.background_tasks_changed": true,
	// The shell's output again, as tool.execution_partial_result carries it.
	"tool.shell_output": true,
}

// CopilotParser parses Copilot CLI JSON events: dotted types with the
// payload under data, and a final top-level result. Use NewCopilotParser.
type CopilotParser struct {
	turn
	usage     usageSum
	streamed  map[string]bool   // message / reasoning ids that had deltas
	partial   map[string]string // tool call id → the output it reported so far
	lastError string
}

// NewCopilotParser returns a parser for one run continuing session known.
func NewCopilotParser(known string) *CopilotParser {
	return &CopilotParser{turn: newTurn(CopilotProviderID, known), streamed: map[string]bool{}, partial: map[string]string{}}
}

// Parse implements procrun.LineParser.
func (p *CopilotParser) Parse(line []byte) ([]agent.Event, error) {
	var ev copilotEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, fmt.Errorf("copilot line: %w", err)
	}
	var d copilotData
	if len(ev.Data) > 0 {
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("copilot %s data: %w", ev.Type, err)
		}
	}
	if d.Model != "" {
		p.model = d.Model
	}
	switch ev.Type {
	case "assistant.message_delta":
		if d.DeltaContent == "" {
			return nil, nil
		}
		p.streamed["m:"+d.MessageID] = true
		p.join.out, p.join.lastNL = true, d.DeltaContent[len(d.DeltaContent)-1] == '\n'
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: d.DeltaContent}}, nil
	case "assistant.message":
		if p.streamed["m:"+d.MessageID] {
			return nil, nil
		}
		return p.text(d.Content), nil
	case "assistant.reasoning_delta":
		if d.DeltaContent == "" {
			return nil, nil
		}
		p.streamed["r:"+d.ReasoningID] = true
		return []agent.Event{{Type: agent.EventReasoningDelta, Text: d.DeltaContent}}, nil
	case "assistant.reasoning":
		if p.streamed["r:"+d.ReasoningID] || d.Content == "" {
			return nil, nil
		}
		return []agent.Event{{Type: agent.EventReasoningDelta, Text: d.Content}}, nil
	case "assistant.usage":
		return []agent.Event{p.usage.add(d.InputTokens, d.OutputTokens, d.CacheRead, d.CacheWrite, 0)}, nil
	case "tool.execution_start":
		if d.ToolCallID == "" {
			break
		}
		return []agent.Event{p.started(ev.Type, d.ToolCallID, d.ToolName, d.Arguments)}, nil
	case "tool.execution_partial_result":
		// The output so far (the real CLI repeats it whole): only what is
		// new since the last one is emitted.
		text, _ := strings.CutPrefix(d.PartialOutput, p.partial[d.ToolCallID])
		if d.ToolCallID == "" || text == "" {
			return nil, nil
		}
		p.partial[d.ToolCallID] = d.PartialOutput
		return []agent.Event{{Type: agent.EventToolOutput, Text: text, Tool: &agent.Tool{ID: d.ToolCallID, Name: p.tools[d.ToolCallID]}}}, nil
	case "tool.execution_complete":
		if d.ToolCallID == "" {
			break
		}
		output := copilotResult(d.Result)
		if output == "" {
			output = errorText(d.Error)
		}
		return []agent.Event{p.completed(ev.Type, d.ToolCallID, output, d.Success != nil && !*d.Success)}, nil
	case "session.error":
		msg := d.Message
		if d.ErrorType != "" {
			msg = d.ErrorType + ": " + msg
		}
		p.lastError = msg
		return []agent.Event{{Type: agent.EventSystem, Subtype: "error", Text: msg}}, nil
	case "result":
		return p.result(&ev), nil
	default:
		if copilotNoise[ev.Type] {
			return nil, nil
		}
	}
	return []agent.Event{p.unknown(ev.Type, "", line)}, nil
}

// copilotResult renders a tool result: content, else detailedContent, else JSON.
func copilotResult(raw json.RawMessage) string {
	var r struct {
		Content         *string `json:"content"`
		DetailedContent *string `json:"detailedContent"`
	}
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Content != nil:
			return *r.Content
		case r.DetailedContent != nil:
			return *r.DetailedContent
		}
	}
	return rawText(raw)
}

// result ends the run: exitCode 0 or success true completes; anything else,
// including a result with neither, fails.
func (p *CopilotParser) result(ev *copilotEvent) []agent.Event {
	out := p.session.update(ev.SessionID, p.model)
	ok := (ev.ExitCode != nil && *ev.ExitCode == 0 && (ev.Success == nil || *ev.Success)) ||
		(ev.ExitCode == nil && ev.Success != nil && *ev.Success)
	if ok {
		return append(out, agent.Event{Type: agent.EventRunCompleted})
	}
	text := p.lastError
	if text == "" {
		text = "copilot reported a failed run"
		if ev.ExitCode != nil {
			text += fmt.Sprintf(" (exit code %d)", *ev.ExitCode)
		}
	}
	return append(out, agent.Event{Type: agent.EventRunFailed, Text: text})
}
