// Qoder CLI `-p --output-format stream-json` events → agent.Events.

package jsonstream

import (
	"bytes"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// QoderProviderID is the qoder provider's id.
const QoderProviderID agent.ProviderID = "qoder"

// QoderParser parses Qoder's stream-json: system/init, assistant and user
// messages with content blocks, and a final result. Use NewQoderParser.
type QoderParser struct{ turn }

// NewQoderParser returns a parser for one run continuing session known.
func NewQoderParser(known string) *QoderParser {
	return &QoderParser{turn: newTurn(QoderProviderID, known)}
}

// Parse implements procrun.LineParser.
func (p *QoderParser) Parse(line []byte) ([]agent.Event, error) {
	return parseStream(p, &p.turn, line)
}

func (p *QoderParser) record(ev *streamRecord) ([]agent.Event, bool) {
	switch ev.Type {
	case "assistant":
		return p.assistant(ev), true
	case "user":
		return p.user(ev), true
	case "result":
		return p.result(ev), true
	}
	return nil, false
}

func (p *QoderParser) assistant(ev *streamRecord) []agent.Event {
	blocks, whole := messageBlocks(ev.Message)
	var out []agent.Event
	var text strings.Builder
	text.WriteString(whole)
	for _, b := range blocks {
		switch b.Type {
		case "thinking":
			if b.Thinking != "" {
				out = append(out, agent.Event{Type: agent.EventReasoningDelta, Text: b.Thinking})
			}
		case "tool_use":
			if b.ID == "" {
				continue
			}
			out = append(out, p.started("assistant/tool_use", b.ID, b.Name, b.Input))
		default:
			text.WriteString(b.Text)
		}
	}
	out = append(out, p.text(text.String())...)
	if len(out) == 0 && len(bytes.TrimSpace(ev.Error)) > 0 {
		out = append(out, agent.Event{Type: agent.EventSystem, Subtype: "error", Text: errorText(ev.Error)})
	}
	return out
}

func (p *QoderParser) user(ev *streamRecord) []agent.Event {
	blocks, _ := messageBlocks(ev.Message)
	var out []agent.Event
	for _, b := range blocks {
		if b.Type != "tool_result" || b.ToolUseID == "" {
			continue
		}
		out = append(out, p.completed("user/tool_result", b.ToolUseID, ContentText(b.Content), b.IsError))
	}
	return out
}

func (p *QoderParser) result(ev *streamRecord) []agent.Event {
	var out []agent.Event
	if u := ev.Usage; u != nil {
		out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens,
			CacheCreationTokens: u.CacheCreationInputTokens, CostUSD: ev.CostUSD, DurationMS: ev.DurationMS,
		}})
	}
	return append(out, ev.end(func() string {
		if s := errorText(ev.Error); s != "" {
			return s
		}
		if ev.StopReason != "" {
			return "qoder run failed: " + ev.StopReason
		}
		return "qoder run failed"
	}))
}
