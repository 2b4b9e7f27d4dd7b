// Parser: Claude Code stream-json stdout lines → agent.Events.

package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
)

// ProviderID is the claude provider's id.
const ProviderID agent.ProviderID = "claude"

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.completed output text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native and interaction payloads.
	MaxNativePayload = 8 << 10
	// maxDiff bounds a file-change approval's diff summary.
	maxDiff = 4 << 10
)

const sessionNotFoundText = "No conversation found with session ID"

// pendingRequest is an open can_use_tool request.
type pendingRequest struct {
	nativeID  json.RawMessage
	kind      agent.InteractionKind
	toolUseID string
	input     json.RawMessage
	// suggestions are the CLI's permission_suggestions: what "approve for
	// the session" grants.
	suggestions []json.RawMessage
}

// Parser turns Claude Code stream-json lines into normalized events. It keeps
// per-run state (session, streamed messages, tool names, pending approvals)
// and is used from one goroutine. The zero value is not ready; use NewParser.
//
// Text and thinking come from stream_event deltas; the assistant line that
// repeats a streamed block is not emitted again. An assistant block whose
// message had no deltas (partial messages off) is emitted whole.
type Parser struct {
	// Interrupting makes an is_error result end the run as run.interrupted
	// (set by the provider when it sent an interrupt or a deny+interrupt).
	Interrupting bool
	// AutoDecision, when set, answers every can_use_tool request at once with
	// this decision (the run's policy when nobody can be asked).
	AutoDecision agent.Decision
	// Grants are the rules approved for the session so far (see Grants): a
	// request whose suggested allow rules are all granted is approved for
	// the session at once, By ByGrant; approving one for the session adds
	// its rules. Nil grants nothing and remembers nothing.
	Grants Grants

	dec             decoder
	sessionID       string
	model           string            // the model last reported on session.updated
	streamed        map[string]bool   // api message ids with text/thinking deltas
	tools           map[string]string // tool_use id → name
	pending         procrun.Ledger[*pendingRequest]
	plan            plan
	outgoing        procrun.Queue
	sawResult       bool
	sessionNotFound bool
}

// NewParser returns a parser for one run. knownSession is the session the run
// resumes (no session.updated is emitted while it stays the same).
func NewParser(knownSession string) *Parser {
	return &Parser{
		sessionID: knownSession,
		streamed:  map[string]bool{},
		tools:     map[string]string{},
		plan:      plan{tasks: map[string]taskCall{}},
	}
}

// SawResult reports whether a result line was parsed.
func (p *Parser) SawResult() bool { return p.sawResult }

// SessionNotFound reports whether the CLI said the resumed session does not exist.
func (p *Parser) SessionNotFound() bool { return p.sessionNotFound }

// SessionID is the latest native session id.
func (p *Parser) SessionID() string { return p.sessionID }

// TakeOutgoing returns and clears the lines the parser wants written to the
// CLI's stdin (policy answers, error replies to unsupported requests).
func (p *Parser) TakeOutgoing() [][]byte { return p.outgoing.Take() }

// Parse parses one stdout line. Malformed JSON returns an error (the caller
// logs and skips the line); unknown valid records become provider.native.
func (p *Parser) Parse(line []byte) ([]agent.Event, error) {
	var r record
	if err := p.dec.decode(line, &r); err != nil {
		return nil, fmt.Errorf("claude line: %w", err)
	}
	switch r.Type {
	case "stream_event":
		return p.streamEvent(&r, line), nil
	case "assistant":
		return p.assistant(&r, line)
	case "user":
		return p.user(&r, line)
	case "system":
		return p.system(&r, line), nil
	case "result":
		return p.result(&r, line), nil
	case "control_request":
		return p.controlRequest(&r, line)
	case "control_cancel_request":
		return p.controlCancel(&r), nil
	case "control_response":
		// Acks of our interrupt / initialize requests: nothing to show.
		return nil, nil
	}
	return []agent.Event{native(r.Type, r.Subtype, nil, line)}, nil
}

func (p *Parser) streamEvent(r *record, line []byte) []agent.Event {
	ev := r.Event
	if ev == nil {
		return []agent.Event{native(r.Type, "", nil, line)}
	}
	switch ev.Type {
	case "content_block_delta":
		if ev.Delta == nil {
			return nil
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text == "" {
				return nil
			}
			p.markStreamed(r.APIMessageID)
			return []agent.Event{{Type: agent.EventAssistantDelta, Text: ev.Delta.Text}}
		case "thinking_delta":
			if ev.Delta.Thinking == "" {
				return nil
			}
			p.markStreamed(r.APIMessageID)
			return []agent.Event{{Type: agent.EventReasoningDelta, Text: ev.Delta.Thinking}}
		case "signature_delta", "input_json_delta", "citations_delta":
			return nil
		}
		return []agent.Event{native(r.Type, ev.Type+"/"+ev.Delta.Type, nil, line)}
	case "message_start", "message_delta", "message_stop", "content_block_start", "content_block_stop", "ping":
		// Framing; tool calls are taken from the complete assistant block.
		return nil
	}
	return []agent.Event{native(r.Type, ev.Type, nil, line)}
}

// markStreamed records the api message id (api_message_id) of a delta line.
func (p *Parser) markStreamed(id string) {
	if id != "" && !p.streamed[id] {
		p.streamed[id] = true
	}
}

// messageBlocks decodes the message of an assistant or user record and its
// content blocks (isText: the content was a plain string).
func messageBlocks(r *record) (m message, blocks []contentBlock, isText bool, err error) {
	if err := json.Unmarshal(r.Message, &m); err != nil {
		return m, nil, false, fmt.Errorf("%s message: %w", r.Type, err)
	}
	blocks, isText = decodeBlocks(m.Content)
	return m, blocks, isText, nil
}

func (p *Parser) assistant(r *record, line []byte) ([]agent.Event, error) {
	m, blocks, _, err := messageBlocks(r)
	if err != nil {
		return nil, err
	}
	var out []agent.Event
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if r.IsAPIErrorMessage || p.streamed[m.ID] || b.Text == "" {
				continue // streamed already, or repeated by the failed result
			}
			out = append(out, agent.Event{Type: agent.EventAssistantDelta, Text: b.Text})
		case "thinking":
			if p.streamed[m.ID] || b.Thinking == "" {
				continue
			}
			out = append(out, agent.Event{Type: agent.EventReasoningDelta, Text: b.Thinking})
		case "redacted_thinking":
		case "tool_use", "server_tool_use", "mcp_tool_use":
			if _, seen := p.tools[b.ID]; seen {
				continue
			}
			p.tools[b.ID] = b.Name
			out = append(out, agent.Event{
				Type:   agent.EventToolStarted,
				Tool:   &agent.Tool{ID: b.ID, Name: b.Name, Input: agent.CompactJSON(b.Input), Summary: toolSummary(b.Name, b.Input)},
				Native: &agent.Native{Provider: ProviderID, Kind: "assistant/" + b.Type, ID: agent.JSONString(b.ID)},
			})
			out = append(out, p.plan.toolUse(b.ID, b.Name, b.Input)...)
		default:
			out = append(out, native(r.Type, b.Type, nil, line))
		}
	}
	return out, nil
}

func (p *Parser) user(r *record, line []byte) ([]agent.Event, error) {
	_, blocks, isText, err := messageBlocks(r)
	if err != nil {
		return nil, err
	}
	var out []agent.Event
	for _, b := range blocks {
		if b.Type != "tool_result" {
			continue
		}
		text, _ := contentText(b.Content)
		out = append(out, agent.Event{
			Type:   agent.EventToolCompleted,
			Tool:   &agent.Tool{ID: b.ToolUseID, Name: p.tools[b.ToolUseID], Output: agent.Truncate(text, MaxToolOutput), IsError: b.IsError},
			Native: &agent.Native{Provider: ProviderID, Kind: "user/tool_result", ID: agent.JSONString(b.ToolUseID)},
		})
		out = append(out, p.plan.toolResult(b.ToolUseID, text, b.IsError)...)
		out = append(out, madeImages(b, p.tools[b.ToolUseID])...)
	}
	if len(out) == 0 || isText {
		// Plain user text: interrupt markers, replays. Kept, not dropped.
		return []agent.Event{native(r.Type, "text", nil, line)}, nil
	}
	return out, nil
}

func (p *Parser) system(r *record, line []byte) []agent.Event {
	switch r.Subtype {
	case "init":
		// A new session, or the model of this one first (a resumed session
		// too) or changed: the chat shows the model the CLI runs.
		if r.SessionID == "" || (r.SessionID == p.sessionID && r.Model == p.model) {
			return nil
		}
		p.sessionID, p.model = r.SessionID, r.Model
		return []agent.Event{{Type: agent.EventSessionUpdated, SessionID: r.SessionID, Model: r.Model}}
	case "status", "thinking_tokens":
		return nil
	case "api_retry":
		text := fmt.Sprintf("API error %s (%s), retrying in %.1f s (attempt %d of %d)",
			rawText(r.ErrorStatus), rawText(r.Error), float64(r.RetryDelayMS)/1000, r.Attempt, r.MaxRetries)
		return []agent.Event{{Type: agent.EventSystem, Subtype: r.Subtype, Text: text, Native: &agent.Native{Provider: ProviderID, Kind: "system/" + r.Subtype}}}
	case "permission_denied":
		var msg string
		_ = json.Unmarshal(r.Message, &msg)
		text := r.ToolName + " was denied"
		if msg != "" {
			text += ": " + msg
		}
		return []agent.Event{{Type: agent.EventSystem, Subtype: r.Subtype, Text: text, Native: &agent.Native{Provider: ProviderID, Kind: "system/" + r.Subtype, ID: agent.JSONString(r.ToolUseID)}}}
	}
	ev := native(r.Type, r.Subtype, nil, line)
	ev.Type, ev.Subtype, ev.Text = agent.EventSystem, r.Subtype, strings.ReplaceAll(r.Subtype, "_", " ")
	return []agent.Event{ev}
}

func (p *Parser) result(r *record, line []byte) []agent.Event {
	p.sawResult = true
	out := p.endPending()
	u := agent.Usage{CostUSD: r.TotalCostUSD, DurationMS: r.DurationMS, NumTurns: r.NumTurns}
	if r.Usage != nil {
		u.InputTokens, u.OutputTokens = r.Usage.InputTokens, r.Usage.OutputTokens
		u.CacheReadTokens, u.CacheCreationTokens = r.Usage.CacheReadInputTokens, r.Usage.CacheCreationInputTokens
	}
	if u != (agent.Usage{}) {
		out = append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &u})
	}
	nat := &agent.Native{Provider: ProviderID, Kind: "result/" + r.Subtype, Payload: resultPayload(r)}
	if !r.IsError {
		return append(out, agent.Event{Type: agent.EventRunCompleted, Text: r.Result, Native: nat})
	}
	for _, e := range r.Errors {
		if strings.Contains(e, sessionNotFoundText) {
			p.sessionNotFound = true
			return append(out, agent.Event{Type: agent.EventSystem, Subtype: "session_not_found", Text: e, Native: nat})
		}
	}
	if p.Interrupting {
		return append(out, agent.Event{Type: agent.EventRunInterrupted, Text: "interrupted", Native: nat})
	}
	return append(out, agent.Event{Type: agent.EventRunFailed, Text: failureText(r), Native: nat})
}

// failureText picks the most readable reason of a failed result.
func failureText(r *record) string {
	if t := strings.TrimSpace(r.Result); t != "" {
		return t
	}
	var errs []string
	for _, e := range r.Errors {
		if e = strings.TrimSpace(e); e != "" {
			errs = append(errs, e)
		}
	}
	if len(errs) > 0 {
		return strings.Join(errs, "; ")
	}
	if s := rawText(r.APIErrorStatus); s != "" && s != "null" {
		return "API error " + s
	}
	if r.TerminalReason != "" {
		return "claude run failed (" + r.TerminalReason + ")"
	}
	return "claude run failed"
}

// resultPayload keeps the result's scalar facts, not its large objects.
func resultPayload(r *record) json.RawMessage {
	b, _ := json.Marshal(struct {
		Subtype        string `json:"subtype"`
		IsError        bool   `json:"is_error"`
		TerminalReason string `json:"terminal_reason,omitempty"`
		SessionID      string `json:"session_id,omitempty"`
	}{r.Subtype, r.IsError, r.TerminalReason, r.SessionID})
	return b
}

// controlRequest maps a CLI → host request. can_use_tool becomes an
// interaction; anything else is answered with an error so the CLI never waits.
func (p *Parser) controlRequest(r *record, line []byte) ([]agent.Event, error) {
	id := agent.CompactJSON(r.RequestID)
	if len(id) == 0 {
		return nil, errors.New("control_request without request_id")
	}
	var req canUseTool
	if err := json.Unmarshal(r.Request, &req); err != nil {
		return nil, fmt.Errorf("control_request: %w", err)
	}
	if req.Subtype != "can_use_tool" {
		p.queue(controlResponse{Type: "control_response", Response: controlResult{
			Subtype: "error", RequestID: id, Error: "unsupported request: " + req.Subtype,
		}})
		return []agent.Event{native(r.Type, req.Subtype, id, line)}, nil
	}
	key := agent.NativeKey(id)
	if p.pending.Has(key) {
		return nil, fmt.Errorf("%w: %s", agent.ErrDuplicateRequest, id)
	}
	in := p.interaction(key, id, &req, line)
	p.pending.Add(key, &pendingRequest{nativeID: id, kind: in.Kind, toolUseID: req.ToolUseID, input: agent.CompactJSON(req.Input), suggestions: req.PermissionSuggestions})
	out := []agent.Event{{
		Type:        agent.EventInteractionRequested,
		Interaction: in,
		Native:      &agent.Native{Provider: ProviderID, Kind: "control_request/can_use_tool", ID: id},
	}}
	auto := agent.InteractionResponse{InteractionID: key, Decision: p.AutoDecision, By: "policy"}
	if p.AutoDecision == "" && in.Kind != agent.KindQuestion && p.Grants.covers(allowRules(req.PermissionSuggestions)) {
		auto.Decision, auto.By = agent.DecisionApproveSession, ByGrant
	}
	if auto.Decision != "" {
		ev, err := p.Respond(auto)
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

func (p *Parser) interaction(key string, id json.RawMessage, req *canUseTool, line []byte) *agent.Interaction {
	name := req.DisplayName
	if name == "" {
		name = req.ToolName
	}
	in := &agent.Interaction{
		ID:       key,
		NativeID: id,
		Title:    toolSummary(name, req.Input),
		Reason:   req.Description,
		Payload:  agent.NativePayload(line, MaxNativePayload),
	}
	if req.BlockedPath != "" {
		in.Reason = strings.TrimSpace(in.Reason + " (" + req.BlockedPath + ")")
	}
	approvals := []agent.Option{{ID: "approve", Label: "Allow", Kind: agent.DecisionApprove}}
	if len(req.PermissionSuggestions) > 0 {
		// What the CLI suggests (a rule for this command, the directory)
		// is granted for the rest of the session.
		approvals = append(approvals, agent.Option{ID: "approve_session", Label: "Allow for this session", Kind: agent.DecisionApproveSession})
	}
	approvals = append(approvals,
		agent.Option{ID: "decline", Label: "Deny", Kind: agent.DecisionDecline},
		agent.Option{ID: "cancel", Label: "Deny and stop", Kind: agent.DecisionCancel})
	switch req.ToolName {
	case "Bash":
		var v struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(req.Input, &v)
		in.Kind, in.Command, in.Options = agent.KindCommandApproval, v.Command, approvals
	case "Edit", "Write", "MultiEdit", "NotebookEdit":
		in.Kind, in.Diff, in.Options = agent.KindFileChangeApproval, diffSummary(req.ToolName, req.Input), approvals
	case "AskUserQuestion":
		in.Kind = agent.KindQuestion
		var a askInput
		_ = json.Unmarshal(req.Input, &a)
		for _, q := range a.Questions {
			// The CLI always lets the user type an answer of their own.
			qq := agent.Question{ID: q.Question, Header: q.Header, Text: q.Question, MultiSelect: q.MultiSelect, AllowOther: true}
			for _, o := range q.Options {
				qq.Options = append(qq.Options, o.Label)
			}
			in.Questions = append(in.Questions, qq)
		}
		in.Title = "Claude has a question"
		in.Options = []agent.Option{
			{ID: "answer", Label: "Answer", Kind: agent.DecisionAnswer},
			{ID: "decline", Label: "Decline", Kind: agent.DecisionDecline},
		}
	default:
		in.Kind, in.Options = agent.KindPermission, approvals
	}
	return in
}

func (p *Parser) controlCancel(r *record) []agent.Event {
	key := agent.NativeKey(agent.CompactJSON(r.RequestID))
	pr, ok := p.pending.Get(key)
	if !ok {
		return nil
	}
	p.pending.Drop(key)
	return []agent.Event{resolved(key, pr, agent.StatusCancelled, "", "")}
}

// Respond answers the pending interaction resp.InteractionID: it queues the
// control_response for the CLI (see TakeOutgoing) and returns the
// interaction.resolved event. An id that is not pending returns
// agent.ErrUnknownInteraction.
func (p *Parser) Respond(resp agent.InteractionResponse) (agent.Event, error) {
	pr, ok := p.pending.Get(resp.InteractionID)
	if !ok {
		return agent.Event{}, fmt.Errorf("%w: %q", agent.ErrUnknownInteraction, resp.InteractionID)
	}
	res := permissionResult{ToolUseID: pr.toolUseID}
	var status string
	switch resp.Decision {
	case agent.DecisionApprove, agent.DecisionApproveSession:
		res.Behavior, status = "allow", agent.StatusApproved
		switch {
		case pr.kind == agent.KindQuestion:
			res.UpdatedInput, status = withAnswers(pr.input, resp.Answers), agent.StatusAnswered
		case resp.Decision == agent.DecisionApproveSession && len(pr.suggestions) > 0:
			// Without suggestions there is nothing to keep: a plain allow.
			res.UpdatedPermissions, status = sessionScoped(pr.suggestions), agent.StatusApprovedForSession
			if p.Grants != nil {
				for _, r := range allowRules(pr.suggestions) {
					p.Grants[r] = true
				}
			}
		}
	case agent.DecisionAnswer:
		res.Behavior, status = "allow", agent.StatusAnswered
		if pr.kind == agent.KindQuestion {
			res.UpdatedInput = withAnswers(pr.input, resp.Answers)
		}
	case agent.DecisionCancel:
		res.Behavior, res.Message, res.Interrupt, status = "deny", "Denied by the chat user, who stopped the turn", true, agent.StatusCancelled
		p.Interrupting = true
	default: // decline and anything unknown: never allow by accident
		res.Behavior, res.Message, status = "deny", "Denied by the chat user", agent.StatusDeclined
		if resp.By == "policy" {
			res.Message = "Denied by Threadline's approval policy: nobody can be asked in this run"
		}
		if pr.kind == agent.KindQuestion {
			res.Message = "The chat user declined to answer"
		}
	}
	p.queue(controlResponse{Type: "control_response", Response: controlResult{
		Subtype: "success", RequestID: pr.nativeID, Response: res,
	}})
	p.pending.Drop(resp.InteractionID)
	return resolved(resp.InteractionID, pr, status, resp.Decision, resp.By), nil
}

// Pending reports whether interaction id is waiting for an answer.
func (p *Parser) Pending(id string) bool { return p.pending.Has(id) }

// EndPending resolves every open interaction as turn_ended (the turn is over
// or the process is gone) and returns the events.
func (p *Parser) EndPending() []agent.Event { return p.endPending() }

func (p *Parser) endPending() []agent.Event {
	return procrun.CloseAll(&p.pending, func(key string, pr *pendingRequest) agent.Event {
		return resolved(key, pr, agent.StatusTurnEnded, "", "")
	})
}

func (p *Parser) queue(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		p.outgoing.Push(b)
	}
}

func resolved(key string, pr *pendingRequest, status string, d agent.Decision, by string) agent.Event {
	return agent.Event{
		Type:       agent.EventInteractionResolved,
		Resolution: &agent.Resolution{InteractionID: key, Status: status, Decision: d, By: by},
		Native:     &agent.Native{Provider: ProviderID, Kind: "control_request/can_use_tool", ID: pr.nativeID},
	}
}

// sessionScoped returns the CLI's permission suggestions as the grant of
// "approve for the session": every destination set to "session" (nothing is
// written to the user's or the project's settings files), and no setMode (a
// suggestion such as acceptEdits would approve every edit, far more than
// the tool on the card).
func sessionScoped(suggestions []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(suggestions))
	for _, s := range suggestions {
		var m map[string]json.RawMessage
		if json.Unmarshal(s, &m) != nil || m == nil || string(m["type"]) == `"setMode"` {
			continue
		}
		m["destination"] = json.RawMessage(`"session"`)
		b, err := json.Marshal(m)
		if err == nil {
			out = append(out, b)
		}
	}
	return out
}

// withAnswers returns AskUserQuestion's input plus "answers": {question: label}.
// A multi-select answer (options one per line, agent.Question.MultiSelect)
// is sent as the CLI takes it: the labels joined with ", ".
func withAnswers(input json.RawMessage, answers map[string]string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	var a askInput
	_ = json.Unmarshal(input, &a)
	out := make(map[string]string, len(answers))
	for k, v := range answers {
		out[k] = v
	}
	for _, q := range a.Questions {
		if v, ok := out[q.Question]; ok && q.MultiSelect {
			var picked []string
			for _, l := range strings.Split(v, "\n") {
				if l = strings.TrimSpace(l); l != "" {
					picked = append(picked, l)
				}
			}
			out[q.Question] = strings.Join(picked, ", ")
		}
	}
	a2, _ := json.Marshal(out)
	m["answers"] = a2
	b, _ := json.Marshal(m)
	return b
}

// toolSummary is a one-line description such as "Bash: ls -la".
func toolSummary(name string, input json.RawMessage) string {
	var v map[string]any
	_ = json.Unmarshal(input, &v)
	pick := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := v[k].(string); ok && s != "" {
				return s
			}
		}
		return ""
	}
	var arg string
	switch name {
	case "Bash":
		arg = pick("command")
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		arg = pick("file_path", "notebook_path")
	case "Glob", "Grep":
		arg = pick("pattern")
	case "WebFetch":
		arg = pick("url")
	case "WebSearch":
		arg = pick("query")
	case "Task", "Agent":
		arg = pick("description")
	case "AskUserQuestion":
		if qs, ok := v["questions"].([]any); ok && len(qs) > 0 {
			if q, ok := qs[0].(map[string]any); ok {
				arg, _ = q["question"].(string)
			}
		}
	default:
		arg = pick("description", "command", "file_path", "path", "pattern", "url", "query")
	}
	arg = strings.Join(strings.Fields(arg), " ")
	if arg == "" {
		return name
	}
	return name + ": " + agent.Truncate(arg, 200)
}

// diffSummary renders a file-change request as a short unified-diff-like text.
func diffSummary(tool string, input json.RawMessage) string {
	var v struct {
		FilePath  string `json:"file_path"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Content   string `json:"content"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
		NotebookPath string `json:"notebook_path"`
		NewSource    string `json:"new_source"`
	}
	_ = json.Unmarshal(input, &v)
	var b strings.Builder
	lines := func(prefix, s string) {
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			b.WriteString(prefix + l + "\n")
		}
	}
	switch tool {
	case "Write":
		b.WriteString("+++ " + v.FilePath + " (new content)\n")
		lines("+", v.Content)
	case "Edit":
		b.WriteString("--- " + v.FilePath + "\n+++ " + v.FilePath + "\n")
		lines("-", v.OldString)
		lines("+", v.NewString)
	case "MultiEdit":
		b.WriteString("--- " + v.FilePath + "\n+++ " + v.FilePath + "\n")
		for _, e := range v.Edits {
			b.WriteString("@@\n")
			lines("-", e.OldString)
			lines("+", e.NewString)
		}
	case "NotebookEdit":
		b.WriteString("+++ " + v.NotebookPath + "\n")
		lines("+", v.NewSource)
	}
	return agent.Truncate(b.String(), maxDiff)
}

// decodeBlocks decodes message content; a string becomes one text block and
// reports isText.
func decodeBlocks(raw json.RawMessage) ([]contentBlock, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return []contentBlock{{Type: "text", Text: s}}, true
	}
	var blocks []contentBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks, false
}

// madeImages are the image events of a tool_result of tool name: the
// images an MCP tool made (a screenshot, a chart). The CLI's own Read of an
// image file shows the agent a file it already has, not one it made: not
// posted.
func madeImages(b contentBlock, name string) []agent.Event {
	if !strings.HasPrefix(name, "mcp__") || b.IsError {
		return nil
	}
	var out []agent.Event
	for _, src := range b.Images() {
		if img, ok := agent.DecodeImage(b.ToolUseID, "", src.MediaType, src.Data, agent.MaxImageBytes); ok {
			out = append(out, agent.Event{Type: agent.EventImage, Image: img,
				Native: &agent.Native{Provider: ProviderID, Kind: "user/tool_result/image", ID: agent.JSONString(b.ToolUseID)}})
		}
	}
	return out
}

// contentText flattens tool_result content (a string or text blocks).
func contentText(raw json.RawMessage) (string, bool) {
	blocks, isText := decodeBlocks(raw)
	if isText {
		return blocks[0].Text, true
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n"), false
}

// native builds a provider.native event with a bounded payload.
func native(typ, sub string, id json.RawMessage, line []byte) agent.Event {
	kind := typ
	if sub != "" {
		kind += "/" + sub
	}
	return agent.Event{Type: agent.EventProviderNative, Subtype: sub, Native: &agent.Native{
		Provider: ProviderID, Kind: kind, ID: id, Payload: agent.NativePayload(line, MaxNativePayload),
	}}
}

// rawText renders a JSON scalar as text (strings unquoted).
func rawText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}
