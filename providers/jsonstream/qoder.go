// Qoder CLI `-p --output-format stream-json` events → agent.Events.

package jsonstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// QoderProviderID is the qoder provider's id.
const QoderProviderID agent.ProviderID = "qoder"

type qoderEvent struct {
	Type       string          `json:"type"`
	Subtype    string          `json:"subtype"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Message    json.RawMessage `json:"message"`
	Error      json.RawMessage `json:"error"`
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	StopReason string          `json:"stop_reason"`
	DurationMS int64           `json:"duration_ms"`
	CostUSD    float64         `json:"total_cost_usd"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

type qoderBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// QoderParser parses Qoder's stream-json: system/init, assistant and user
// messages with content blocks, and a final result. Use NewQoderParser.
type QoderParser struct{ turn }

// NewQoderParser returns a parser for one run continuing session known.
func NewQoderParser(known string) *QoderParser {
	return &QoderParser{turn: newTurn(QoderProviderID, known)}
}

// Parse implements procrun.LineParser.
func (p *QoderParser) Parse(line []byte) ([]agent.Event, error) {
	var ev qoderEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, fmt.Errorf("qoder line: %w", err)
	}
	out := p.seen(ev.SessionID, ev.Model)
	switch ev.Type {
	case "system":
		if ev.Subtype == "init" {
			return out, nil
		}
	case "assistant":
		return append(out, p.assistant(&ev)...), nil
	case "user":
		return append(out, p.user(&ev)...), nil
	case "result":
		return append(out, p.result(&ev)...), nil
	}
	return append(out, p.unknown(ev.Type, ev.Subtype, line)), nil
}

func (p *QoderParser) blocks(raw json.RawMessage) (blocks []qoderBlock, text string) {
	var m struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &m)
	c := bytes.TrimSpace(m.Content)
	if len(c) > 0 && c[0] == '"' {
		_ = json.Unmarshal(c, &text)
		return nil, text
	}
	_ = json.Unmarshal(c, &blocks)
	return blocks, ""
}

func (p *QoderParser) assistant(ev *qoderEvent) []agent.Event {
	blocks, whole := p.blocks(ev.Message)
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
		msg := rawText(ev.Error)
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(ev.Error, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		out = append(out, agent.Event{Type: agent.EventSystem, Subtype: "error", Text: msg})
	}
	return out
}

func (p *QoderParser) user(ev *qoderEvent) []agent.Event {
	blocks, _ := p.blocks(ev.Message)
	var out []agent.Event
	for _, b := range blocks {
		if b.Type != "tool_result" || b.ToolUseID == "" {
			continue
		}
		output := rawText(b.Content)
		var parts []qoderBlock
		if json.Unmarshal(b.Content, &parts) == nil {
			var s []string
			for _, pt := range parts {
				if pt.Text != "" {
					s = append(s, pt.Text)
				}
			}
			output = strings.Join(s, "\n")
		}
		out = append(out, p.completed("user/tool_result", b.ToolUseID, output, b.IsError))
	}
	return out
}

func (p *QoderParser) result(ev *qoderEvent) []agent.Event {
	var out []agent.Event
	if u := ev.Usage; u != nil {
		out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadInputTokens,
			CacheCreationTokens: u.CacheCreationInputTokens, CostUSD: ev.CostUSD, DurationMS: ev.DurationMS,
		}})
	}
	if ev.IsError || (ev.Subtype != "" && ev.Subtype != "success") {
		text := ev.Result
		if text == "" {
			var e struct {
				Message string `json:"message"`
			}
			if json.Unmarshal(ev.Error, &e) == nil && e.Message != "" {
				text = e.Message
			} else if s := rawText(ev.Error); s != "" {
				text = s
			}
		}
		if text == "" {
			text = "qoder run failed"
			if ev.StopReason != "" {
				text += ": " + ev.StopReason
			}
		}
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: text})
	}
	return append(out, agent.Event{Type: agent.EventRunCompleted, Text: ev.Result})
}
