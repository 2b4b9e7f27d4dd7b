// The stream-json family: Claude Code's print-mode records, which
// cursor-agent and qoder print: one object a line with a type and subtype,
// the session and model, an Anthropic message, and a final result.

package jsonstream

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/internal/anthropic"
)

// streamRecord is one line of the family: the fields its dialects print,
// each named as its dialect names it (a field a dialect does not print
// stays zero).
type streamRecord struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	SessionID string          `json:"session_id"`
	Model     string          `json:"model"`
	Message   json.RawMessage `json:"message"`
	// cursor-agent: a thinking record's text, a streamed delta's timing
	// (timestamp_ms without model_call_id), a tool_call record.
	Text        string          `json:"text"`
	TimestampMS *int64          `json:"timestamp_ms"`
	ModelCallID *string         `json:"model_call_id"`
	CallID      string          `json:"call_id"`
	ToolCall    json.RawMessage `json:"tool_call"`
	// result (qoder's error, stop reason and cost; qoder's usage has
	// Claude Code's names, cursor-agent's its own).
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	DurationMS int64           `json:"duration_ms"`
	Error      json.RawMessage `json:"error"`
	StopReason string          `json:"stop_reason"`
	CostUSD    float64         `json:"total_cost_usd"`
	Usage      *struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CursorInputTokens        int64 `json:"inputTokens"`
		CursorOutputTokens       int64 `json:"outputTokens"`
		CursorCacheReadTokens    int64 `json:"cacheReadTokens"`
		CursorCacheWriteTokens   int64 `json:"cacheWriteTokens"`
	} `json:"usage"`
}

// streamDialect is a family parser: record maps one decoded record; false
// leaves it to provider.native.
type streamDialect interface {
	record(rec *streamRecord) ([]agent.Event, bool)
}

// parseStream is the Parse of family dialect d: the line decoded (malformed
// JSON is an error naming the dialect; see decodeLine), its session and model noted (a
// session.updated for a new session), system/init taken, the rest mapped by
// d; a record d does not map becomes provider.native, its kind
// type/subtype.
func parseStream(d streamDialect, t *turn, line []byte) ([]agent.Event, error) {
	var rec streamRecord
	if err := decodeLine(line, &rec); err != nil {
		return nil, fmt.Errorf("%s line: %w", t.provider, err)
	}
	out := t.seen(rec.SessionID, rec.Model)
	if rec.Type == "system" && rec.Subtype == "init" {
		return out, nil
	}
	evs, ok := d.record(&rec)
	switch {
	case !ok:
		return append(out, t.unknown(rec.Type, rec.Subtype, line)), nil
	case len(out) == 0: // the common case: no copy
		return evs, nil
	}
	return append(out, evs...), nil
}

// messageBlocks decodes a message's content: its blocks (the Messages
// API's, as Claude Code prints them), or the whole text when the content is
// a string.
func messageBlocks(raw json.RawMessage) (blocks []anthropic.Block, text string) {
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

// end is the terminal event of a result record: run.failed when it is an
// error (is_error, or a subtype other than success) with its result text,
// else failed's; run.completed with the result text otherwise.
func (r *streamRecord) end(failed func() string) agent.Event {
	if r.IsError || (r.Subtype != "" && r.Subtype != "success") {
		text := r.Result
		if text == "" {
			text = failed()
		}
		return agent.Event{Type: agent.EventRunFailed, Text: text}
	}
	return agent.Event{Type: agent.EventRunCompleted, Text: r.Result}
}
