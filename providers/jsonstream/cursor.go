// Cursor Agent `--print --output-format stream-json` events → agent.Events.

package jsonstream

import (
	"bytes"
	"encoding/json"
	"sort"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// CursorProviderID is the cursor-agent provider's id.
const CursorProviderID agent.ProviderID = "cursor-agent"

// cursorMessage is the message of an assistant record: its text blocks.
type cursorMessage struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

// CursorParser parses cursor-agent stream-json. With
// --stream-partial-output assistant text arrives as deltas (events with
// timestamp_ms) followed by one consolidated echo (no timestamp_ms, or a
// model_call_id); the echo only contributes what the deltas missed. Use
// NewCursorParser.
type CursorParser struct {
	turn
	echoed strings.Builder // text emitted since the last consolidated echo
}

// NewCursorParser returns a parser for one run continuing session known.
func NewCursorParser(known string) *CursorParser {
	return &CursorParser{turn: newTurn(CursorProviderID, known)}
}

// Parse implements procrun.LineParser.
func (p *CursorParser) Parse(line []byte) ([]agent.Event, error) {
	return parseStream(p, &p.turn, line)
}

func (p *CursorParser) record(ev *streamRecord) ([]agent.Event, bool) {
	switch ev.Type {
	case "user":
		return nil, true
	case "thinking":
		if ev.Subtype == "delta" && ev.Text != "" {
			return []agent.Event{{Type: agent.EventReasoningDelta, Text: ev.Text}}, true
		}
		return nil, ev.Subtype == "delta" || ev.Subtype == "completed"
	case "assistant":
		return p.assistant(ev), true
	case "tool_call":
		return p.toolCall(ev)
	case "result":
		return p.result(ev), true
	}
	return nil, false
}

func (p *CursorParser) assistant(ev *streamRecord) []agent.Event {
	var m cursorMessage
	_ = json.Unmarshal(ev.Message, &m)
	var b strings.Builder
	for _, c := range m.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	text := b.String()
	if ev.TimestampMS != nil && ev.ModelCallID == nil {
		// A streamed delta: emitted verbatim, even when it repeats earlier text.
		if text == "" {
			return nil
		}
		p.echoed.WriteString(text)
		p.join.out, p.join.lastNL = true, strings.HasSuffix(text, "\n")
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: text}}
	}
	// A consolidated echo of the turn's text: emit only a missing suffix.
	emitted := p.echoed.String()
	p.echoed.Reset()
	switch {
	case text == "" || text == emitted:
		return nil
	case emitted == "":
		if s := p.join.next(text); s != "" {
			return []agent.Event{{Type: agent.EventAssistantDelta, Text: s}}
		}
	case strings.HasPrefix(text, emitted):
		suffix := text[len(emitted):]
		p.join.lastNL = strings.HasSuffix(suffix, "\n")
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: suffix}}
	}
	return nil // diverged from the deltas: never repeat shown text
}

// toolCall maps started/completed; the tool kind is the single key inside
// tool_call ("readToolCall", "shellToolCall", "function", ...).
func (p *CursorParser) toolCall(ev *streamRecord) ([]agent.Event, bool) {
	if ev.CallID == "" || (ev.Subtype != "started" && ev.Subtype != "completed") {
		return nil, false
	}
	var kinds map[string]json.RawMessage
	_ = json.Unmarshal(ev.ToolCall, &kinds)
	var key string
	var body json.RawMessage
	keys := make([]string, 0, len(kinds))
	for k, v := range kinds {
		if len(v) > 0 && v[0] == '{' && (strings.HasSuffix(k, "ToolCall") || k == "function") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if len(keys) > 0 {
		key, body = keys[0], kinds[keys[0]]
	}
	var call struct {
		Args      json.RawMessage `json:"args"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Result    json.RawMessage `json:"result"`
	}
	_ = json.Unmarshal(body, &call)
	name := strings.TrimSuffix(key, "ToolCall")
	input := call.Args
	if key == "function" {
		name, input = call.Name, call.Arguments
	}
	if name == "" {
		name = "tool"
	}
	kind := "tool_call/" + ev.Subtype
	if ev.Subtype == "started" {
		return []agent.Event{p.started(kind, ev.CallID, name, input)}, true
	}
	var out []agent.Event
	if _, ok := p.tools[ev.CallID]; !ok {
		out = append(out, p.started(kind, ev.CallID, name, input))
	}
	output, isErr := cursorResult(call.Result)
	return append(out, p.completed(kind, ev.CallID, output, isErr)), true
}

// cursorResult renders {"success": {...}} or {"error": {...}}.
func cursorResult(raw json.RawMessage) (string, bool) {
	var r struct {
		Success json.RawMessage `json:"success"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return rawText(raw), false
	}
	if len(bytes.TrimSpace(r.Error)) > 0 && !bytes.Equal(bytes.TrimSpace(r.Error), []byte("null")) {
		var e struct {
			ErrorMessage string `json:"errorMessage"`
			Message      string `json:"message"`
		}
		_ = json.Unmarshal(r.Error, &e)
		switch {
		case e.ErrorMessage != "":
			return e.ErrorMessage, true
		case e.Message != "":
			return e.Message, true
		}
		return rawText(r.Error), true
	}
	var s struct {
		Content  *string `json:"content"`
		Stdout   *string `json:"stdout"`
		Stderr   string  `json:"stderr"`
		ExitCode *int    `json:"exitCode"`
	}
	_ = json.Unmarshal(r.Success, &s)
	switch {
	case s.Content != nil:
		return *s.Content, false
	case s.Stdout != nil:
		out := *s.Stdout
		if s.Stderr != "" {
			out += s.Stderr
		}
		return out, s.ExitCode != nil && *s.ExitCode != 0
	}
	return rawText(r.Success), false
}

func (p *CursorParser) result(ev *streamRecord) []agent.Event {
	var out []agent.Event
	if u := ev.Usage; u != nil {
		out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{
			InputTokens: u.CursorInputTokens, OutputTokens: u.CursorOutputTokens,
			CacheReadTokens: u.CursorCacheReadTokens, CacheCreationTokens: u.CursorCacheWriteTokens, DurationMS: ev.DurationMS,
		}})
	}
	return append(out, ev.end(func() string { return "cursor-agent reported an error (" + ev.Subtype + ")" }))
}
