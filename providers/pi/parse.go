// Parser: pi RPC-mode stdout lines → agent.Events.

package pi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/jsonstream"
)

// ProviderID is the pi provider's id.
const ProviderID agent.ProviderID = "pi"

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.output and tool.completed text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native and interaction payloads.
	MaxNativePayload = 8 << 10
)

// record is one stdout line; only the fields the parser reads are decoded.
type record struct {
	Type string `json:"type"`
	// response
	ID      json.RawMessage `json:"id"`
	Command string          `json:"command"`
	Success bool            `json:"success"`
	Error   string          `json:"error"`
	Data    json.RawMessage `json:"data"`
	// Message is an AgentMessage on message_start / message_end (decoded
	// there) and a string on a confirm dialog.
	Message json.RawMessage `json:"message"`
	// msg is Message decoded when the decoder's fast path did so with the
	// line (hasMsg), as json.Unmarshal would.
	msg    message
	hasMsg bool
	Event  *assistantEvent `json:"assistantMessageEvent"`
	// agent_end
	Messages []message `json:"messages"`
	// tool_execution_*
	ToolCallID    string          `json:"toolCallId"`
	ToolName      string          `json:"toolName"`
	Args          json.RawMessage `json:"args"`
	PartialResult *toolResult     `json:"partialResult"`
	Result        *toolResult     `json:"result"`
	IsError       bool            `json:"isError"`
	// auto_retry_*
	Attempt      int     `json:"attempt"`
	MaxAttempts  int     `json:"maxAttempts"`
	DelayMS      float64 `json:"delayMs"`
	ErrorMessage string  `json:"errorMessage"`
	FinalError   string  `json:"finalError"`
	// extension_ui_request
	Method      string   `json:"method"`
	Title       string   `json:"title"`
	Options     []string `json:"options"`
	Placeholder string   `json:"placeholder"`
	Prefill     string   `json:"prefill"`
	// compaction_*, extension_error
	Reason string `json:"reason"`
}

// assistantEvent is a message_update's assistantMessageEvent (the part read).
type assistantEvent struct {
	Type  string `json:"type"`
	Delta string `json:"delta"`
}

// message is a pi AgentMessage (the part read).
type message struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"` // string or blocks
	StopReason   string          `json:"stopReason"`
	ErrorMessage string          `json:"errorMessage"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	Usage        *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
		Cost       struct {
			Total float64 `json:"total"`
		} `json:"cost"`
	} `json:"usage"`
}

type toolResult struct {
	Content json.RawMessage `json:"content"`
}

// state is get_state's data (the part read).
type state struct {
	SessionID   string `json:"sessionId"`
	SessionFile string `json:"sessionFile"`
	Model       *struct {
		ID       string `json:"id"`
		Provider string `json:"provider"`
	} `json:"model"`
}

type pendingDialog struct {
	id     json.RawMessage
	method string
}

type toolState struct {
	name   string
	output string
	done   bool
}

// Parser turns pi RPC lines into normalized events. It keeps per-run state
// (session, streamed messages, tools, usage, the retry window, open dialogs)
// and is used from one goroutine. The zero value is not ready; use NewParser.
//
// Terminal events: pi has no stop reason of its own; a run ends at the
// agent_end that no auto_retry_start follows, and the last assistant
// message's stopReason decides: stop → run.completed, aborted →
// run.interrupted, length → run.failed, error → run.failed (after the retry
// window, see PendingFailure), anything else → run.failed.
type Parser struct {
	// Interrupting makes a failed or aborted end of the run run.interrupted
	// (set by the provider when it sent abort).
	Interrupting bool
	// AutoAnswer, when set, answers every extension dialog at once with this
	// decision (the run's policy when nobody can be asked).
	AutoAnswer agent.Decision

	sessionID string
	promptID  string
	active    bool
	streamed  bool
	tools     map[string]*toolState
	toolOrder []string
	usage     agent.Usage
	pending   *agent.Event // a failed agent_end that auto_retry_start may still follow
	retrying  bool
	terminal  bool
	dialogs   map[string]*pendingDialog
	order     []string
	outgoing  procrun.Queue
	dec       decoder
}

// NewParser returns a parser for one run. knownSession is the session the run
// resumes (no session.updated is emitted while it stays the same).
func NewParser(knownSession string) *Parser {
	return &Parser{sessionID: knownSession, tools: map[string]*toolState{}, dialogs: map[string]*pendingDialog{}}
}

// StartTurn tells the parser that the prompt with this command id was sent;
// it resets the per-turn state. Its failure response fails the run.
func (p *Parser) StartTurn(promptID string) {
	p.promptID, p.active, p.terminal = promptID, true, false
	p.usage, p.pending, p.retrying = agent.Usage{}, nil, false
	p.Interrupting = false
}

// Active reports whether a turn started and has not ended.
func (p *Parser) Active() bool { return p.active && !p.terminal }

// SessionID is the latest native session (the session file when pi has one).
func (p *Parser) SessionID() string { return p.sessionID }

// Retrying reports whether pi is between auto_retry_start and the retried run.
func (p *Parser) Retrying() bool { return p.retrying }

// PendingFailure reports whether a failed agent_end waits for the retry
// window: an auto_retry_start arriving next cancels it, otherwise Settle
// emits it.
func (p *Parser) PendingFailure() bool { return p.pending != nil }

// Settle emits a pending failure (the retry window passed) and ends the turn.
func (p *Parser) Settle() []agent.Event {
	if p.pending == nil {
		return nil
	}
	ev := *p.pending
	p.pending = nil
	return p.end(ev)
}

// TakeOutgoing returns and clears the lines the parser wants written to
// pi's stdin (dialog answers).
func (p *Parser) TakeOutgoing() [][]byte { return p.outgoing.Take() }

// Parse parses one stdout line. Malformed JSON returns an error (the caller
// logs and skips the line); unknown valid records become provider.native.
func (p *Parser) Parse(line []byte) ([]agent.Event, error) {
	var r record
	if err := p.dec.decode(line, &r); err != nil {
		return nil, fmt.Errorf("pi line: %w", err)
	}
	switch r.Type {
	case "response":
		return p.response(&r, line), nil
	case "agent_start", "turn_start", "turn_end":
		return nil, nil
	case "message_start":
		if m, ok := r.message(); ok && m.Role == "assistant" {
			p.streamed = false
		}
		return nil, nil
	case "message_update":
		return p.messageUpdate(&r, line), nil
	case "message_end":
		return p.messageEnd(&r, line), nil
	case "tool_execution_start":
		return p.toolStart(&r), nil
	case "tool_execution_update":
		return p.toolUpdate(&r), nil
	case "tool_execution_end":
		return p.toolEnd(&r), nil
	case "agent_end":
		return p.agentEnd(&r), nil
	case "auto_retry_start":
		p.pending, p.retrying = nil, true
		text := fmt.Sprintf("%s; retrying in %.1f s (attempt %d of %d)", orDefault(r.ErrorMessage, "model error"), r.DelayMS/1000, r.Attempt, r.MaxAttempts)
		return []agent.Event{system("api_retry", text, agent.NativePayload(line, MaxNativePayload))}, nil
	case "auto_retry_end":
		p.retrying = false
		if r.Success {
			return []agent.Event{system("api_retry_end", fmt.Sprintf("retry succeeded (attempt %d)", r.Attempt), agent.NativePayload(line, MaxNativePayload))}, nil
		}
		p.pending = nil
		return p.end(agent.Event{Type: agent.EventRunFailed, Text: orDefault(r.FinalError, "pi gave up retrying"), Native: nat("auto_retry_end", nil, agent.NativePayload(line, MaxNativePayload))}), nil
	case "compaction_start", "compaction_end", "extension_error":
		return []agent.Event{system(r.Type, strings.ReplaceAll(r.Type, "_", " ")+suffix(r.Reason, r.Error), agent.NativePayload(line, MaxNativePayload))}, nil
	case "extension_ui_request":
		return p.dialog(&r, line)
	}
	return []agent.Event{native(r.Type, nil, line)}, nil
}

func (p *Parser) response(r *record, line []byte) []agent.Event {
	id := agent.CompactJSON(r.ID)
	isPrompt := r.Command == "prompt" && p.promptID != "" && string(id) == string(agent.JSONString(p.promptID))
	if !r.Success {
		if isPrompt {
			return p.end(agent.Event{Type: agent.EventRunFailed, Text: "pi refused the prompt: " + r.Error, Native: nat("response/prompt", id, agent.NativePayload(line, MaxNativePayload))})
		}
		return []agent.Event{system("rpc_error", r.Command+": "+r.Error, agent.NativePayload(line, MaxNativePayload))}
	}
	if r.Command == "get_state" {
		var s state
		if json.Unmarshal(r.Data, &s) != nil {
			return nil
		}
		sid := s.SessionFile
		if sid == "" {
			sid = s.SessionID
		}
		if sid == "" || sid == p.sessionID {
			return nil
		}
		p.sessionID = sid
		ev := agent.Event{Type: agent.EventSessionUpdated, SessionID: sid}
		if s.Model != nil {
			ev.Model = s.Model.Provider + "/" + s.Model.ID
		}
		return []agent.Event{ev}
	}
	return nil
}

func (p *Parser) messageUpdate(r *record, line []byte) []agent.Event {
	if r.Event == nil {
		return []agent.Event{native(r.Type, nil, line)}
	}
	switch r.Event.Type {
	case "text_delta":
		if r.Event.Delta == "" {
			return nil
		}
		p.streamed = true
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: r.Event.Delta}}
	case "thinking_delta":
		if r.Event.Delta == "" {
			return nil
		}
		return []agent.Event{{Type: agent.EventReasoningDelta, Text: r.Event.Delta}}
	case "start", "text_start", "text_end", "thinking_start", "thinking_end",
		"toolcall_start", "toolcall_delta", "toolcall_end", "done", "error":
		// Framing; tools come from tool_execution_*, the outcome from message_end.
		return nil
	}
	return []agent.Event{native(r.Type+"/"+r.Event.Type, nil, line)}
}

func (p *Parser) messageEnd(r *record, line []byte) []agent.Event {
	m, ok := r.message()
	if !ok {
		return []agent.Event{native(r.Type, nil, line)}
	}
	switch m.Role {
	case "assistant":
		if u := m.Usage; u != nil {
			p.usage.InputTokens += u.Input
			p.usage.OutputTokens += u.Output
			p.usage.CacheReadTokens += u.CacheRead
			p.usage.CacheCreationTokens += u.CacheWrite
			p.usage.CostUSD += u.Cost.Total
		}
		if !p.streamed {
			if text := contentText(m.Content); text != "" {
				return []agent.Event{{Type: agent.EventAssistantDelta, Text: text}}
			}
		}
		return nil
	case "user", "toolResult":
		return nil
	}
	return []agent.Event{native(r.Type+"/"+m.Role, nil, line)}
}

// message is the record's message, decoded by the decoder or now; ok is
// false when it is not an AgentMessage.
func (r *record) message() (m message, ok bool) {
	if r.hasMsg {
		return r.msg, true
	}
	return m, json.Unmarshal(r.Message, &m) == nil
}

func (p *Parser) tool(id string) *toolState {
	t, ok := p.tools[id]
	if !ok {
		t = &toolState{}
		p.tools[id] = t
		p.toolOrder = append(p.toolOrder, id)
	}
	return t
}

func (p *Parser) toolStart(r *record) []agent.Event {
	t := p.tool(r.ToolCallID)
	t.name = r.ToolName
	in := agent.CompactJSON(r.Args)
	if len(in) > MaxNativePayload {
		in = nil
	}
	return []agent.Event{{
		Type:   agent.EventToolStarted,
		Tool:   &agent.Tool{ID: r.ToolCallID, Name: r.ToolName, Input: in, Summary: jsonstream.ToolSummary(r.ToolName, r.Args)},
		Native: nat("tool_execution_start", agent.JSONString(r.ToolCallID), nil),
	}}
}

func (p *Parser) toolUpdate(r *record) []agent.Event {
	t := p.tool(r.ToolCallID)
	if r.PartialResult == nil || t.done {
		return nil
	}
	// partialResult is accumulated, not a delta.
	text := contentText(r.PartialResult.Content)
	if text == t.output {
		return nil
	}
	delta := text
	if strings.HasPrefix(text, t.output) {
		delta = text[len(t.output):]
	}
	t.output = text
	return []agent.Event{{Type: agent.EventToolOutput, Text: agent.Truncate(delta, MaxToolOutput), Tool: &agent.Tool{ID: r.ToolCallID, Name: t.name}}}
}

func (p *Parser) toolEnd(r *record) []agent.Event {
	t := p.tool(r.ToolCallID)
	t.done = true
	name := r.ToolName
	if name == "" {
		name = t.name
	}
	var text string
	if r.Result != nil {
		text = contentText(r.Result.Content)
	}
	return []agent.Event{{
		Type:   agent.EventToolCompleted,
		Tool:   &agent.Tool{ID: r.ToolCallID, Name: name, Output: agent.Truncate(text, MaxToolOutput), IsError: r.IsError},
		Native: nat("tool_execution_end", agent.JSONString(r.ToolCallID), nil),
	}}
}

// agentEnd maps the outcome of the run's last assistant message.
func (p *Parser) agentEnd(r *record) []agent.Event {
	var last *message
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "assistant" {
			last = &r.Messages[i]
			break
		}
	}
	n := nat("agent_end", nil, nil)
	if last == nil {
		if p.Interrupting {
			return p.end(agent.Event{Type: agent.EventRunInterrupted, Text: "aborted", Native: n})
		}
		return p.end(agent.Event{Type: agent.EventRunFailed, Text: "pi ended the run without an answer", Native: n})
	}
	n.Payload, _ = json.Marshal(map[string]string{"stopReason": last.StopReason, "errorMessage": last.ErrorMessage})
	switch last.StopReason {
	case "stop":
		return p.end(agent.Event{Type: agent.EventRunCompleted, Text: contentText(last.Content), Native: n})
	case "aborted":
		return p.end(agent.Event{Type: agent.EventRunInterrupted, Text: orDefault(last.ErrorMessage, "aborted"), Native: n})
	case "length":
		return p.end(agent.Event{Type: agent.EventRunFailed, Text: "the model hit its output token limit (stopReason length)", Native: n})
	case "error":
		if p.Interrupting {
			return p.end(agent.Event{Type: agent.EventRunInterrupted, Text: orDefault(last.ErrorMessage, "aborted"), Native: n})
		}
		// auto_retry_start may follow within a millisecond: wait for it.
		p.pending = &agent.Event{Type: agent.EventRunFailed, Text: orDefault(last.ErrorMessage, "model error"), Native: n}
		return nil
	}
	return p.end(agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("pi ended the run with stop reason %q", last.StopReason), Native: n})
}

// end emits the turn's closing events: open dialogs resolve as turn_ended,
// unfinished tools complete as errors, usage, then the terminal event.
func (p *Parser) end(terminal agent.Event) []agent.Event {
	if p.terminal {
		return nil
	}
	if p.Interrupting && terminal.Type == agent.EventRunFailed {
		terminal.Type = agent.EventRunInterrupted
	}
	out := p.EndPending()
	for _, id := range p.toolOrder {
		if t := p.tools[id]; !t.done {
			t.done = true
			out = append(out, agent.Event{Type: agent.EventToolCompleted,
				Tool: &agent.Tool{ID: id, Name: t.name, Output: "(no result: the run ended)", IsError: true}})
		}
	}
	if p.usage != (agent.Usage{}) {
		u := p.usage
		out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &u})
	}
	p.terminal, p.active = true, false
	return append(out, terminal)
}

// dialog maps an extension_ui_request. Dialog methods (confirm, select,
// input, editor) become interactions; fire-and-forget ones provider.native.
func (p *Parser) dialog(r *record, line []byte) ([]agent.Event, error) {
	id := agent.CompactJSON(r.ID)
	key := agent.NativeKey(id)
	in := &agent.Interaction{ID: key, NativeID: id, Title: r.Title, Payload: agent.NativePayload(line, MaxNativePayload)}
	switch r.Method {
	case "confirm":
		in.Kind = agent.KindPermission
		_ = json.Unmarshal(r.Message, &in.Reason)
		in.Options = []agent.Option{{ID: "yes", Label: "Yes", Kind: agent.DecisionApprove}, {ID: "no", Label: "No", Kind: agent.DecisionDecline}}
	case "select":
		in.Kind = agent.KindQuestion
		in.Questions = []agent.Question{{ID: "value", Text: r.Title, Options: r.Options}}
		for _, o := range r.Options {
			in.Options = append(in.Options, agent.Option{ID: o, Label: o, Kind: agent.DecisionAnswer})
		}
		in.Options = append(in.Options, agent.Option{ID: "cancel", Label: "Cancel", Kind: agent.DecisionDecline})
	case "input", "editor":
		in.Kind = agent.KindQuestion
		in.Questions = []agent.Question{{ID: "value", Text: r.Title, Header: r.Placeholder}}
		in.Options = []agent.Option{{ID: "answer", Label: "Answer", Kind: agent.DecisionAnswer}, {ID: "cancel", Label: "Cancel", Kind: agent.DecisionDecline}}
	default:
		return []agent.Event{native(r.Type+"/"+r.Method, id, line)}, nil
	}
	if len(id) == 0 {
		return []agent.Event{native(r.Type+"/"+r.Method, nil, line)}, errors.New("extension_ui_request without id")
	}
	if _, dup := p.dialogs[key]; dup {
		return nil, fmt.Errorf("%w: %s", agent.ErrDuplicateRequest, id)
	}
	p.dialogs[key] = &pendingDialog{id: id, method: r.Method}
	p.order = append(p.order, key)
	out := []agent.Event{{Type: agent.EventInteractionRequested, Interaction: in, Native: nat("extension_ui_request/"+r.Method, id, nil)}}
	if p.AutoAnswer != "" {
		ev, err := p.Respond(agent.InteractionResponse{InteractionID: key, Decision: p.AutoAnswer, By: "policy"})
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// Respond answers the open dialog resp.InteractionID with an
// extension_ui_response (see TakeOutgoing) and returns interaction.resolved.
// confirm: approve → confirmed true, decline → false; select: OptionID (one
// of the options) or Answers["value"]; input/editor: Answers["value"];
// cancel, and anything without a value, → cancelled.
func (p *Parser) Respond(resp agent.InteractionResponse) (agent.Event, error) {
	d, ok := p.dialogs[resp.InteractionID]
	if !ok {
		return agent.Event{}, fmt.Errorf("%w: %q", agent.ErrUnknownInteraction, resp.InteractionID)
	}
	out := map[string]any{"type": "extension_ui_response", "id": d.id}
	status, decision := agent.StatusCancelled, resp.Decision
	value, hasValue := resp.Answers["value"]
	if d.method == "select" && resp.OptionID != "" && resp.OptionID != "cancel" {
		value, hasValue = resp.OptionID, true
	}
	switch {
	case resp.Decision == agent.DecisionCancel:
		out["cancelled"] = true
	case d.method == "confirm" && (resp.Decision == agent.DecisionApprove || resp.Decision == agent.DecisionApproveSession || resp.OptionID == "yes"):
		out["confirmed"], status, decision = true, agent.StatusApproved, agent.DecisionApprove
	case d.method == "confirm":
		out["confirmed"], status, decision = false, agent.StatusDeclined, agent.DecisionDecline
	case hasValue && resp.Decision != agent.DecisionDecline:
		out["value"], status, decision = value, agent.StatusAnswered, agent.DecisionAnswer
	default:
		out["cancelled"], status, decision = true, agent.StatusDeclined, agent.DecisionDecline
	}
	b, _ := json.Marshal(out)
	p.outgoing.Push(b)
	p.drop(resp.InteractionID)
	return resolved(resp.InteractionID, d, status, decision, resp.By), nil
}

// EndPending resolves every open dialog as turn_ended, answering pi with
// cancelled, and returns the events.
func (p *Parser) EndPending() []agent.Event {
	var out []agent.Event
	for _, key := range p.order {
		if d, ok := p.dialogs[key]; ok {
			b, _ := json.Marshal(map[string]any{"type": "extension_ui_response", "id": d.id, "cancelled": true})
			p.outgoing.Push(b)
			out = append(out, resolved(key, d, agent.StatusTurnEnded, "", ""))
		}
	}
	clear(p.dialogs)
	p.order = p.order[:0]
	return out
}

func (p *Parser) drop(key string) {
	delete(p.dialogs, key)
	for i, k := range p.order {
		if k == key {
			p.order = append(p.order[:i], p.order[i+1:]...)
			break
		}
	}
}

func resolved(key string, d *pendingDialog, status string, dec agent.Decision, by string) agent.Event {
	return agent.Event{
		Type:       agent.EventInteractionResolved,
		Resolution: &agent.Resolution{InteractionID: key, Status: status, Decision: dec, By: by},
		Native:     nat("extension_ui_request/"+d.method, d.id, nil),
	}
}

// contentText flattens message or tool content: a string or text blocks.
func contentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "")
}

func system(subtype, text string, payload json.RawMessage) agent.Event {
	return agent.Event{Type: agent.EventSystem, Subtype: subtype, Text: text, Native: nat(subtype, nil, payload)}
}

func nat(kind string, id, payload json.RawMessage) *agent.Native {
	return &agent.Native{Provider: ProviderID, Kind: kind, ID: id, Payload: payload}
}

func native(kind string, id json.RawMessage, line []byte) agent.Event {
	return agent.Event{Type: agent.EventProviderNative, Native: nat(kind, id, agent.NativePayload(line, MaxNativePayload))}
}

func orDefault(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

func suffix(parts ...string) string {
	for _, s := range parts {
		if s != "" {
			return ": " + s
		}
	}
	return ""
}
