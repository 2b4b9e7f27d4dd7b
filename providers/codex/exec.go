// ExecParser: the older `codex exec --json` JSONL output → agent.Events. A
// compatibility parser (procrun.LineParser); Run uses the app-server.

package codex

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

var _ procrun.LineParser = (*ExecParser)(nil)

// ExecParser parses `codex exec --json` lines: thread.started, turn.started,
// item.started / item.updated / item.completed (agent_message, reasoning,
// command_execution, file_change, mcp_tool_call, web_search, todo_list,
// error), turn.completed (usage), turn.failed and error. Use one per run.
type ExecParser struct {
	threadID string
	lastText string
	started  map[string]bool
}

// NewExecParser returns a parser; knownThread is the resumed thread (no
// session.updated while it stays the same).
func NewExecParser(knownThread string) *ExecParser {
	return &ExecParser{threadID: knownThread, started: map[string]bool{}}
}

type execLine struct {
	Type     string          `json:"type"`
	ThreadID string          `json:"thread_id"`
	Item     *execItem       `json:"item"`
	Usage    *execUsage      `json:"usage"`
	Error    json.RawMessage `json:"error"`
	Message  string          `json:"message"`
}

type execItem struct {
	ID               string          `json:"id"`
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Command          string          `json:"command"`
	AggregatedOutput string          `json:"aggregated_output"`
	ExitCode         *int            `json:"exit_code"`
	Status           string          `json:"status"`
	Changes          []execChange    `json:"changes"`
	Server           string          `json:"server"`
	Tool             string          `json:"tool"`
	Arguments        json.RawMessage `json:"arguments"`
	Query            string          `json:"query"`
	Message          string          `json:"message"`
}

type execChange struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
}

type execUsage struct {
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
}

// Parse implements procrun.LineParser.
func (p *ExecParser) Parse(line []byte) ([]agent.Event, error) {
	var l execLine
	if err := json.Unmarshal(line, &l); err != nil {
		return nil, fmt.Errorf("codex exec line: %w", err)
	}
	switch l.Type {
	case "thread.started":
		if l.ThreadID == "" || l.ThreadID == p.threadID {
			return nil, nil
		}
		p.threadID = l.ThreadID
		return []agent.Event{{Type: agent.EventSessionUpdated, SessionID: l.ThreadID, Native: p.native(l.Type, "")}}, nil
	case "turn.started":
		return nil, nil
	case "item.started", "item.updated", "item.completed":
		if l.Item == nil {
			return nil, fmt.Errorf("codex exec %s without item", l.Type)
		}
		return p.item(l.Type, l.Item), nil
	case "turn.completed":
		var out []agent.Event
		if u := l.Usage; u != nil {
			out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{
				InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CachedInputTokens, NumTurns: 1,
			}})
		}
		return append(out, agent.Event{Type: agent.EventRunCompleted, Text: p.lastText, Native: p.native(l.Type, "")}), nil
	case "turn.failed":
		msg := errorMessage(l.Error)
		if msg == "" {
			msg = "codex turn failed"
		}
		return []agent.Event{{Type: agent.EventRunFailed, Text: msg, Native: p.native(l.Type, "")}}, nil
	case "error":
		return []agent.Event{{Type: agent.EventSystem, Subtype: "error", Text: upstreamMessage(l.Message), Native: p.native(l.Type, "")}}, nil
	}
	return []agent.Event{{Type: agent.EventProviderNative, Subtype: l.Type, Native: &agent.Native{Provider: ProviderID, Kind: l.Type, Payload: agent.NativePayload(line, 8<<10)}}}, nil
}

func (p *ExecParser) item(typ string, it *execItem) []agent.Event {
	done := typ == "item.completed"
	switch it.Type {
	case "agent_message":
		if !done {
			return nil
		}
		p.lastText = it.Text
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: it.Text}}
	case "reasoning":
		if !done || it.Text == "" {
			return nil
		}
		return []agent.Event{{Type: agent.EventReasoningDelta, Text: it.Text}}
	case "error":
		return []agent.Event{{Type: agent.EventSystem, Subtype: "error", Text: it.Message, Native: p.native(typ, it.ID)}}
	case "todo_list":
		return []agent.Event{{Type: agent.EventProviderNative, Subtype: "todo_list", Native: p.native(typ+"/todo_list", it.ID)}}
	}
	name, summary, input := execTool(it)
	if name == "" {
		return []agent.Event{{Type: agent.EventProviderNative, Subtype: it.Type, Native: p.native(typ+"/"+it.Type, it.ID)}}
	}
	var out []agent.Event
	if !p.started[it.ID] {
		p.started[it.ID] = true
		out = append(out, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: it.ID, Name: name, Input: input, Summary: summary}, Native: p.native(typ+"/"+it.Type, it.ID)})
	}
	if done {
		output := it.AggregatedOutput
		if output == "" && it.Type != "command_execution" {
			output = it.Status
		}
		isErr := it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0)
		out = append(out, agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: it.ID, Name: name, Output: output, IsError: isErr}, Native: p.native(typ+"/"+it.Type, it.ID)})
	}
	return out
}

func execTool(it *execItem) (name, summary string, input json.RawMessage) {
	switch it.Type {
	case "command_execution":
		input, _ = json.Marshal(map[string]string{"command": it.Command})
		return "shell", "shell: " + it.Command, input
	case "file_change":
		var paths []string
		for _, c := range it.Changes {
			paths = append(paths, c.Kind+" "+c.Path)
		}
		input, _ = json.Marshal(map[string]any{"changes": it.Changes})
		return "apply_patch", "apply_patch: " + strings.Join(paths, ", "), input
	case "mcp_tool_call":
		return "mcp:" + it.Server + "/" + it.Tool, "mcp " + it.Server + "." + it.Tool, it.Arguments
	case "web_search":
		input, _ = json.Marshal(map[string]string{"query": it.Query})
		return "web_search", "web_search: " + it.Query, input
	}
	return "", "", nil
}

func errorMessage(raw json.RawMessage) string {
	var v struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &v) == nil && v.Message != "" {
		return upstreamMessage(v.Message)
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return upstreamMessage(s)
	}
	return ""
}

// upstreamMessage unwraps an upstream JSON error body ({"error":{"message"}}).
func upstreamMessage(msg string) string {
	var v struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if strings.HasPrefix(strings.TrimSpace(msg), "{") && json.Unmarshal([]byte(msg), &v) == nil && v.Error.Message != "" {
		return v.Error.Message
	}
	return msg
}

func (p *ExecParser) native(kind, id string) *agent.Native {
	n := &agent.Native{Provider: ProviderID, Kind: kind}
	if id != "" {
		n.ID, _ = json.Marshal(id)
	}
	return n
}
