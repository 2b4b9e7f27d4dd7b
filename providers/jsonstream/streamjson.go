// The stream-json family: Claude Code's print-mode records, which
// cursor-agent and qoder print: one object a line with a type and subtype,
// the session and model, an Anthropic message, and a final result.

package jsonstream

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// streamRecord is what every record of the family has (and the result
// record's status), embedded in each dialect's record type.
type streamRecord struct {
	Type       string          `json:"type"`
	Subtype    string          `json:"subtype"`
	SessionID  string          `json:"session_id"`
	Model      string          `json:"model"`
	Message    json.RawMessage `json:"message"`
	IsError    bool            `json:"is_error"`
	Result     string          `json:"result"`
	DurationMS int64           `json:"duration_ms"`
}

func (r *streamRecord) envelope() *streamRecord { return r }

// streamBlock is one content block of a message: text, thinking, tool_use
// or tool_result.
type streamBlock struct {
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

// streamDialect is a family parser: record maps one decoded record of its
// type R; false leaves it to provider.native.
type streamDialect[R any] interface {
	record(rec *R) ([]agent.Event, bool)
}

// parseStream is the Parse of a family dialect d, whose record type R
// embeds streamRecord: the line decoded (malformed JSON is an error naming
// the dialect), its session and model noted (a session.updated for a new
// session), system/init taken, the rest mapped by d; a record d does not map
// becomes provider.native, its kind type/subtype.
func parseStream[R any, PR interface {
	*R
	envelope() *streamRecord
}](d streamDialect[R], t *turn, line []byte) ([]agent.Event, error) {
	var rec R
	if err := json.Unmarshal(line, &rec); err != nil {
		return nil, fmt.Errorf("%s line: %w", t.provider, err)
	}
	env := PR(&rec).envelope()
	out := t.seen(env.SessionID, env.Model)
	if env.Type == "system" && env.Subtype == "init" {
		return out, nil
	}
	evs, ok := d.record(&rec)
	if !ok {
		return append(out, t.unknown(env.Type, env.Subtype, line)), nil
	}
	return append(out, evs...), nil
}

// messageBlocks decodes a message's content: its blocks, or the whole text
// when the content is a string.
func messageBlocks(raw json.RawMessage) (blocks []streamBlock, text string) {
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
