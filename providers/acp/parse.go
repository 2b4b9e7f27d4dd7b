// Parser: ACP JSON-RPC lines from the agent → agent.Events, and the client's
// own requests and answers. It does no I/O: the run writes what TakeOutgoing
// returns and feeds every stdout line to Parse.

package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.output and tool.completed text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native and interaction payloads.
	MaxNativePayload = 8 << 10
	// maxDiff bounds a file-change approval's diff.
	maxDiff = 4 << 10
)

// ErrUnknownOption is returned by Respond for an OptionID the request did
// not offer; the request stays pending. An agent reusing the id of a pending
// request is agent.agent.ErrDuplicateRequest, an answer to an id that is not
// pending agent.agent.ErrUnknownInteraction; resolutions carry agent's statuses.
var ErrUnknownOption = errors.New("acp: unknown permission option")

// FileSystem serves the fs/* client methods. The client does not declare fs
// at initialize, but some agents call it anyway (opencode 1.18.33 delegates a
// permitted write to fs/write_text_file).
type FileSystem interface {
	ReadTextFile(path string, line, limit int) (string, error)
	WriteTextFile(path, content string) error
}

// ParserOptions configure a Parser.
type ParserOptions struct {
	// Provider names the provider in native envelopes.
	Provider agent.ProviderID
	// KnownSession is the session being resumed: no session.updated is
	// emitted for it.
	KnownSession string
	// EmitSession turns a new session id into session.updated (for agents
	// whose sessions can be resumed); otherwise it is provider.native.
	EmitSession bool
	// HoldReplay keeps treating history updates as replay after the
	// session/load answer, until EndReplay (gemini streams most of its replay
	// after answering).
	HoldReplay bool
	// SessionNotFound reports whether a session/load error means the session
	// does not exist; nil means code -32002 (resource not found) only.
	SessionNotFound func(*jsonrpc.Error) bool
	// AutoDecision, when set, answers every permission request at once with
	// this decision (the run's policy when nobody can be asked).
	AutoDecision agent.Decision
	// FS serves fs/read_text_file and fs/write_text_file; nil refuses them.
	FS FileSystem
	// VerifiedWith names the CLI versions the definition was verified with,
	// for the message that refuses an unknown protocol version.
	VerifiedWith []string
}

// Reply is an agent's answer to one of the client's requests.
type Reply struct {
	Method string
	Result json.RawMessage
	Err    *jsonrpc.Error
}

// Parsed is what one stdout line produced.
type Parsed struct {
	Events []agent.Event
	// Reply is set when the line answered one of the client's requests.
	Reply *Reply
}

type pendingRequest struct {
	nativeID json.RawMessage
	options  []PermissionOption
	toolID   string
}

type toolState struct {
	id, name, title, kind string
	input                 json.RawMessage
	started, done         bool
	output                string
}

// Parser is the client side of one ACP connection: it builds the client's
// requests, maps the agent's lines to events and answers the agent's
// requests. It is used from one goroutine.
type Parser struct {
	opts ParserOptions

	nextID    int64
	calls     map[string]string // our request id (compact JSON) → method
	sessionID string
	agentInfo Implementation
	caps      initializeResult
	selectors sessionResult

	replaying bool
	replayed  int

	tools     map[string]*toolState
	toolOrder []string

	pending      map[string]*pendingRequest
	pendingOrder []string
	outgoing     procrun.Queue

	usage       agent.Usage
	chunkUsage  agent.Usage
	answer      strings.Builder
	lastMessage string

	cancelling      bool
	sessionNotFound bool

	dec decoder
}

// NewParser returns a parser for one connection.
func NewParser(opts ParserOptions) *Parser {
	return &Parser{
		opts:      opts,
		sessionID: opts.KnownSession,
		calls:     map[string]string{},
		tools:     map[string]*toolState{},
		pending:   map[string]*pendingRequest{},
	}
}

// SessionID is the current native session id.
func (p *Parser) SessionID() string { return p.sessionID }

// SessionNotFound reports whether session/load said the session does not exist.
func (p *Parser) SessionNotFound() bool { return p.sessionNotFound }

// AgentInfo is the agent's initialize agentInfo.
func (p *Parser) AgentInfo() Implementation { return p.agentInfo }

// LoadSession reports whether the agent advertised session/load.
func (p *Parser) LoadSession() bool { return p.caps.AgentCapabilities.LoadSession }

// ImagePrompts reports whether the agent accepts image content blocks.
func (p *Parser) ImagePrompts() bool { return p.caps.AgentCapabilities.PromptCapabilities.Image }

// Replaying reports whether history updates are being treated as replay.
func (p *Parser) Replaying() bool { return p.replaying }

// Pending reports whether interaction id is waiting for an answer.
func (p *Parser) Pending(id string) bool { _, ok := p.pending[id]; return ok }

// TakeOutgoing returns and clears the lines the parser wants written to the
// agent's stdin (answers to its requests, the cancel notification).
func (p *Parser) TakeOutgoing() [][]byte { return p.outgoing.Take() }

// Request builds one request line of the client and remembers its id, so
// that the answer is routed back as a Reply.
func (p *Parser) Request(method string, params any) []byte {
	p.nextID++
	b, err := json.Marshal(rpcRequest{JSONRPC: "2.0", ID: p.nextID, Method: method, Params: params})
	if err != nil {
		panic(fmt.Sprintf("acp: marshal %s: %v", method, err))
	}
	p.Track(json.RawMessage(fmt.Sprint(p.nextID)), method)
	return b
}

// Track registers a request the client sent with this id (Request does it;
// golden tests replaying a transcript call it directly).
func (p *Parser) Track(id json.RawMessage, method string) {
	p.calls[string(agent.CompactJSON(id))] = method
	switch method {
	case "session/load":
		p.replaying, p.replayed = true, 0
	case "session/prompt":
		p.newTurn()
	}
}

// newTurn resets the per-turn state (a connection may carry several prompts).
func (p *Parser) newTurn() {
	p.usage, p.chunkUsage = agent.Usage{}, agent.Usage{}
	p.answer.Reset()
	p.cancelling = false
}

// Parse parses one stdout line. Malformed JSON and answers to unknown ids
// return an error (the caller logs and skips the line); unknown valid
// messages become provider.native. An agent reusing the id of a pending
// request returns agent.ErrDuplicateRequest.
func (p *Parser) Parse(line []byte) (Parsed, error) {
	var m inMessage
	badParams := false
	if err := p.dec.decode(line, &m); err != nil {
		// Valid JSON-RPC whose params do not fit the shapes the client reads
		// is still a message: keep its envelope.
		var g rpcMessage
		if json.Unmarshal(line, &g) != nil {
			return Parsed{}, fmt.Errorf("acp line: %w", err)
		}
		m, badParams = inMessage{ID: g.ID, Method: g.Method, Result: g.Result, Error: g.Error}, true
	}
	switch {
	case m.Method != "" && m.hasID():
		evs, err := p.request(&m, badParams, line)
		return Parsed{Events: evs}, err
	case m.Method != "":
		return Parsed{Events: p.notification(&m, badParams, line)}, nil
	case m.hasID() && (m.Result != nil || m.Error != nil):
		return p.response(&m)
	}
	return Parsed{}, errors.New("acp line: not a JSON-RPC request, notification or response")
}

// response routes an answer to one of the client's requests.
func (p *Parser) response(m *inMessage) (Parsed, error) {
	key := string(agent.CompactJSON(m.ID))
	method, ok := p.calls[key]
	if !ok {
		return Parsed{}, fmt.Errorf("acp: answer to unknown request id %s", key)
	}
	delete(p.calls, key)
	r := &Reply{Method: method, Result: m.Result, Err: m.Error}
	out := Parsed{Reply: r}
	switch method {
	case "initialize":
		out.Events = p.initialized(r)
	case "session/new":
		out.Events = p.sessionStarted(r)
	case "session/load":
		out.Events = p.sessionLoaded(r)
	case "session/prompt":
		out.Events = p.promptAnswered(r)
	default:
		if r.Err != nil {
			out.Events = []agent.Event{p.system("request_failed", method+": "+r.Err.Error(), nil)}
		}
	}
	return out, nil
}

func (p *Parser) initialized(r *Reply) []agent.Event {
	if r.Err != nil {
		return []agent.Event{{Type: agent.EventRunFailed, Text: "initialize: " + r.Err.Error(), Native: p.nat("initialize", nil, nil)}}
	}
	if err := json.Unmarshal(r.Result, &p.caps); err != nil {
		return []agent.Event{{Type: agent.EventRunFailed, Text: "initialize: " + err.Error(), Native: p.nat("initialize", nil, agent.NativePayload(r.Result, MaxNativePayload))}}
	}
	if p.caps.AgentInfo != nil {
		p.agentInfo = *p.caps.AgentInfo
	}
	var v int
	if json.Unmarshal(p.caps.ProtocolVersion, &v) != nil || !slices.Contains(KnownProtocolVersions, v) {
		verified := "not verified with any version of it"
		if len(p.opts.VerifiedWith) > 0 {
			verified = fmt.Sprintf("verified with %s %s", p.opts.Provider, strings.Join(p.opts.VerifiedWith, ", "))
		}
		return []agent.Event{{Type: agent.EventRunFailed, Text: fmt.Sprintf("%s answered ACP protocolVersion %s; this client speaks protocolVersion %v and was %s",
			p.agentName(), bytes.TrimSpace(p.caps.ProtocolVersion), KnownProtocolVersions, verified), Native: p.nat("initialize", nil, agent.NativePayload(r.Result, MaxNativePayload))}}
	}
	return nil
}

func (p *Parser) agentName() string {
	if p.agentInfo.Name != "" {
		return strings.TrimSpace(p.agentInfo.Name + " " + p.agentInfo.Version)
	}
	return string(p.opts.Provider)
}

func (p *Parser) sessionStarted(r *Reply) []agent.Event {
	if r.Err != nil {
		return []agent.Event{{Type: agent.EventRunFailed, Text: "session/new: " + r.Err.Error(), Native: p.nat("session/new", nil, nil)}}
	}
	_ = json.Unmarshal(r.Result, &p.selectors)
	if p.selectors.SessionID == "" {
		return []agent.Event{{Type: agent.EventRunFailed, Text: "session/new: the agent returned no sessionId", Native: p.nat("session/new", nil, agent.NativePayload(r.Result, MaxNativePayload))}}
	}
	if p.selectors.SessionID == p.sessionID {
		return nil
	}
	p.sessionID = p.selectors.SessionID
	if !p.opts.EmitSession || !p.LoadSession() {
		b, _ := json.Marshal(sessionIDParams{SessionID: p.sessionID})
		return []agent.Event{{Type: agent.EventProviderNative, Native: p.nat("session/new", nil, b)}}
	}
	return []agent.Event{{Type: agent.EventSessionUpdated, SessionID: p.sessionID, Model: p.currentModel()}}
}

func (p *Parser) sessionLoaded(r *Reply) []agent.Event {
	if r.Err != nil {
		p.replaying = false
		notFound := r.Err.Code == CodeResourceNotFound
		if p.opts.SessionNotFound != nil {
			notFound = p.opts.SessionNotFound(r.Err)
		}
		if notFound {
			p.sessionNotFound = true
			return []agent.Event{p.system("session_not_found", "session/load: "+r.Err.Error(), nil)}
		}
		return []agent.Event{{Type: agent.EventRunFailed, Text: "session/load: " + r.Err.Error(), Native: p.nat("session/load", nil, nil)}}
	}
	_ = json.Unmarshal(r.Result, &p.selectors)
	if p.opts.HoldReplay {
		return nil
	}
	return p.EndReplay()
}

// EndReplay ends the history replay of a session/load: later history updates
// are new output again. It returns a provider.native event counting the
// replayed updates, if any.
func (p *Parser) EndReplay() []agent.Event {
	if !p.replaying {
		return nil
	}
	p.replaying = false
	p.answer.Reset()
	if p.replayed == 0 {
		return nil
	}
	b, _ := json.Marshal(map[string]int{"replayed_updates": p.replayed})
	return []agent.Event{{Type: agent.EventProviderNative, Subtype: "replay", Native: p.nat("session/load", nil, b)}}
}

// currentModel is the model selector's current value, if the agent has one.
func (p *Parser) currentModel() string {
	for _, o := range p.selectors.ConfigOptions {
		if o.ID == "model" || o.Category == "model" {
			return o.CurrentValue
		}
	}
	if p.selectors.Models != nil {
		return p.selectors.Models.CurrentModelID
	}
	return ""
}

// ModelRequest is the request that selects model in the current session:
// session/set_config_option on a "model" config option, else the unstable
// session/set_model when the agent listed models. ok is false when the agent
// offers no model selector.
func (p *Parser) ModelRequest(model string) (method string, params any, ok bool) {
	for _, o := range p.selectors.ConfigOptions {
		if o.ID == "model" || o.Category == "model" {
			return "session/set_config_option", map[string]string{"sessionId": p.sessionID, "configId": o.ID, "value": model}, true
		}
	}
	if p.selectors.Models != nil {
		return "session/set_model", map[string]string{"sessionId": p.sessionID, "modelId": model}, true
	}
	return "", nil, false
}

// ModeRequest is the request that switches the session to mode (e.g. "plan"):
// a "mode" config option that offers it, else session/set_mode when the
// agent lists it. ok is false when the agent offers no such mode.
func (p *Parser) ModeRequest(mode string) (method string, params any, ok bool) {
	for _, o := range p.selectors.ConfigOptions {
		if o.ID != "mode" && o.Category != "mode" {
			continue
		}
		for _, v := range o.Options {
			if v.Value == mode {
				return "session/set_config_option", map[string]string{"sessionId": p.sessionID, "configId": o.ID, "value": mode}, true
			}
		}
	}
	if p.selectors.Modes != nil {
		for _, m := range p.selectors.Modes.AvailableModes {
			if m.ID == mode {
				return "session/set_mode", map[string]string{"sessionId": p.sessionID, "modeId": mode}, true
			}
		}
	}
	return "", nil, false
}

// promptAnswered ends the turn: open interactions resolve as turn_ended, open
// tools complete, usage is reported, and the stop reason picks the terminal
// event.
func (p *Parser) promptAnswered(r *Reply) []agent.Event {
	out := p.EndTurn()
	nat := p.nat("session/prompt", nil, agent.NativePayload(r.Result, MaxNativePayload))
	if r.Err != nil {
		out = p.appendUsage(out)
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: r.Err.Error(), Native: nat})
	}
	var res promptResult
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: "session/prompt result: " + err.Error(), Native: nat})
	}
	switch {
	case res.Usage != nil:
		p.usage.InputTokens, p.usage.OutputTokens = res.Usage.InputTokens, res.Usage.OutputTokens
		p.usage.CacheReadTokens, p.usage.CacheCreationTokens = res.Usage.CachedReadTokens, res.Usage.CachedWriteTokens
	case res.Meta.Quota != nil:
		p.usage.InputTokens, p.usage.OutputTokens = res.Meta.Quota.TokenCount.InputTokens, res.Meta.Quota.TokenCount.OutputTokens
	default:
		p.usage.InputTokens, p.usage.OutputTokens = p.chunkUsage.InputTokens, p.chunkUsage.OutputTokens
		p.usage.CacheReadTokens = p.chunkUsage.CacheReadTokens
	}
	out = p.appendUsage(out)
	switch res.StopReason {
	case "end_turn":
		return append(out, agent.Event{Type: agent.EventRunCompleted, Text: p.answer.String(), Native: nat})
	case "cancelled":
		return append(out, agent.Event{Type: agent.EventRunInterrupted, Text: "cancelled", Native: nat})
	case "max_tokens":
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: "the model hit its output token limit (stopReason max_tokens)", Native: nat})
	case "max_turn_requests":
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: "the agent hit its limit of model requests for one turn (stopReason max_turn_requests)", Native: nat})
	case "refusal":
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: "the model refused to continue (stopReason refusal)", Native: nat})
	}
	return append(out, agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("unknown stop reason %q", res.StopReason), Native: nat})
}

func (p *Parser) appendUsage(out []agent.Event) []agent.Event {
	if p.usage == (agent.Usage{}) {
		return out
	}
	u := p.usage
	return append(out, agent.Event{Type: agent.EventUsageUpdated, Usage: &u})
}

// EndTurn resolves every open interaction as turn_ended (answering the agent
// with the cancelled outcome so that it never waits) and completes every
// tool still running as an error. The prompt answer calls it; the run calls
// it when the agent is gone.
func (p *Parser) EndTurn() []agent.Event {
	var out []agent.Event
	for _, key := range p.pendingOrder {
		if pr, ok := p.pending[key]; ok {
			p.answerOutcome(pr.nativeID, outcome{Outcome: "cancelled"})
			out = append(out, p.resolved(key, pr, agent.StatusTurnEnded, "", ""))
		}
	}
	clear(p.pending)
	p.pendingOrder = p.pendingOrder[:0]
	for _, id := range p.toolOrder {
		t := p.tools[id]
		if t.started && !t.done {
			t.done = true
			out = append(out, agent.Event{Type: agent.EventToolCompleted,
				Tool:   &agent.Tool{ID: t.id, Name: t.toolName(), Output: "(no result: the turn ended)", IsError: true},
				Native: p.nat("turn_end", agent.JSONString(t.id), nil)})
		}
	}
	return out
}

// notification maps a notification from the agent.
func (p *Parser) notification(m *inMessage, badParams bool, line []byte) []agent.Event {
	if badParams {
		return []agent.Event{p.native(m.Method, "", nil, line)}
	}
	switch m.Method {
	case "session/update":
		if m.Params.Update == nil {
			return []agent.Event{p.native(m.Method, "", nil, line)}
		}
		return p.update(m.Params.Update, line)
	case "$/cancel_request":
		key := string(agent.CompactJSON(m.Params.RequestID))
		if pr, ok := p.pending[key]; ok {
			p.drop(key)
			return []agent.Event{p.resolved(key, pr, agent.StatusCancelled, "", "")}
		}
	}
	return []agent.Event{p.native(m.Method, "", nil, line)}
}

// historyUpdates are the session/update kinds a session/load replays.
var historyUpdates = map[string]bool{
	"user_message_chunk": true, "agent_message_chunk": true, "agent_thought_chunk": true,
	"tool_call": true, "tool_call_update": true, "plan": true, "usage_update": true,
}

func (p *Parser) update(u *sessionUpdate, line []byte) []agent.Event {
	if p.replaying && historyUpdates[u.SessionUpdate] {
		p.replayed++
		return nil
	}
	switch u.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk":
		if u.Meta != nil && u.Meta.Usage != nil {
			p.chunkUsage.InputTokens += u.Meta.Usage.InputTokens
			p.chunkUsage.OutputTokens += u.Meta.Usage.OutputTokens
			p.chunkUsage.CacheReadTokens += u.Meta.Usage.CachedReadTokens
		}
		c := u.block
		if !u.hasBlock {
			_ = json.Unmarshal(u.Content, &c)
		}
		if c.Type != "text" {
			return []agent.Event{p.native("session/update", u.SessionUpdate, nil, line)}
		}
		if c.Text == "" {
			return nil
		}
		if u.SessionUpdate == "agent_thought_chunk" {
			return []agent.Event{{Type: agent.EventReasoningDelta, Text: c.Text}}
		}
		if u.MessageID != "" && u.MessageID != p.lastMessage {
			p.lastMessage = u.MessageID
			p.answer.Reset()
		}
		p.answer.WriteString(c.Text)
		return []agent.Event{{Type: agent.EventAssistantDelta, Text: c.Text}}
	case "tool_call", "tool_call_update":
		return p.toolUpdate(u)
	case "plan":
		return []agent.Event{p.system("plan", planText(u.Entries), agent.NativePayload(line, MaxNativePayload))}
	case "usage_update":
		if u.Cost != nil && strings.EqualFold(u.Cost.Currency, "USD") {
			p.usage.CostUSD = u.Cost.Amount
		}
		return nil
	case "notice":
		text := strings.TrimSpace(derefOr(u.Title, "") + ": " + u.Description)
		return []agent.Event{p.system("notice", strings.Trim(text, ": "), agent.NativePayload(line, MaxNativePayload))}
	}
	return []agent.Event{p.native("session/update", u.SessionUpdate, nil, line)}
}

func planText(entries []planEntry) string {
	var b strings.Builder
	for _, e := range entries {
		mark := "[ ]"
		switch e.Status {
		case "completed":
			mark = "[x]"
		case "in_progress":
			mark = "[~]"
		}
		b.WriteString(mark + " " + e.Content + "\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// tool returns the state of tool call id, creating it.
func (p *Parser) tool(id string) *toolState {
	t, ok := p.tools[id]
	if !ok {
		t = &toolState{id: id}
		p.tools[id] = t
		p.toolOrder = append(p.toolOrder, id)
	}
	return t
}

// merge folds a ToolCall / ToolCallUpdate into t.
func (t *toolState) merge(u *sessionUpdate) {
	if u.Title != nil && *u.Title != "" {
		if t.title == "" && !strings.ContainsAny(*u.Title, " /") {
			t.name = *u.Title // opencode's first title is the tool name ("bash")
		}
		t.title = *u.Title
	}
	if u.Kind != "" {
		t.kind = u.Kind
	}
	if u.Meta != nil && u.Meta.ToolName != "" {
		t.name = u.Meta.ToolName
	}
	if in := agent.CompactJSON(u.RawInput); len(in) > 2 {
		t.input = in
	}
}

func (t *toolState) toolName() string {
	if t.name != "" {
		return t.name
	}
	// gemini names its calls "<tool>__<tool>_<n>_<n>".
	if name, rest, ok := strings.Cut(t.id, "__"); ok && name != "" && strings.HasPrefix(rest, name+"_") {
		return name
	}
	if t.kind != "" {
		return t.kind
	}
	return "tool"
}

func (p *Parser) start(t *toolState) agent.Event {
	t.started = true
	summary := t.title
	if summary == "" {
		summary = t.toolName()
	}
	var in json.RawMessage
	if len(t.input) <= MaxNativePayload {
		in = t.input
	}
	return agent.Event{
		Type:   agent.EventToolStarted,
		Tool:   &agent.Tool{ID: t.id, Name: t.toolName(), Input: in, Summary: agent.Truncate(oneLine(summary), 200)},
		Native: p.nat("session/update/tool_call", agent.JSONString(t.id), nil),
	}
}

func (p *Parser) toolUpdate(u *sessionUpdate) []agent.Event {
	if u.ToolCallID == "" {
		return nil
	}
	t := p.tool(u.ToolCallID)
	t.merge(u)
	if t.done {
		return nil
	}
	p.answer.Reset()
	var out []agent.Event
	status := u.Status
	if status == "" && u.SessionUpdate == "tool_call" {
		status = "in_progress"
	}
	text, hasContent := contentText(u.Content)
	switch status {
	case "pending":
		return nil
	case "completed", "failed":
		if !t.started {
			out = append(out, p.start(t))
		}
		t.done = true
		if !hasContent {
			text = rawOutputText(u.RawOutput)
		}
		out = append(out, agent.Event{
			Type:   agent.EventToolCompleted,
			Tool:   &agent.Tool{ID: t.id, Name: t.toolName(), Output: agent.Truncate(text, MaxToolOutput), IsError: status == "failed"},
			Native: p.nat("session/update/tool_call_update", agent.JSONString(t.id), nil),
		})
		if status == "completed" && t.kind != "read" {
			// A read shows the agent a file it has; other tools' images
			// (a screenshot, a chart) are what it made.
			for _, img := range contentImages(t.id, u.Content) {
				out = append(out, agent.Event{Type: agent.EventImage, Image: img,
					Native: p.nat("session/update/tool_call_update", agent.JSONString(t.id), nil)})
			}
		}
		return out
	}
	if !t.started {
		out = append(out, p.start(t))
	}
	if hasContent && text != t.output {
		delta := text
		if strings.HasPrefix(text, t.output) {
			delta = text[len(t.output):]
		}
		t.output = text
		if delta != "" {
			out = append(out, agent.Event{Type: agent.EventToolOutput, Text: agent.Truncate(delta, MaxToolOutput),
				Tool: &agent.Tool{ID: t.id, Name: t.toolName()}})
		}
	}
	return out
}

// contentText flattens a tool call content list: text blocks as they are,
// diffs as a one-line note. ok is false when content is absent or empty.
func contentText(raw json.RawMessage) (string, bool) {
	var items []toolCallContent
	if json.Unmarshal(raw, &items) != nil || len(items) == 0 {
		return "", false
	}
	var parts []string
	for _, c := range items {
		switch c.Type {
		case "content":
			if c.Content != nil && c.Content.Text != "" {
				parts = append(parts, c.Content.Text)
			}
		case "diff":
			parts = append(parts, "edited "+c.Path)
		case "terminal":
			parts = append(parts, "[terminal]")
		}
	}
	return strings.Join(parts, "\n"), true
}

// contentImages are the image blocks of a tool call's content list.
func contentImages(toolID string, raw json.RawMessage) []*agent.MadeImage {
	if !bytes.Contains(raw, []byte(`"image"`)) {
		return nil
	}
	var items []toolCallContent
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []*agent.MadeImage
	for _, c := range items {
		if c.Type != "content" || c.Content == nil || c.Content.Type != "image" || c.Content.Data == "" {
			continue
		}
		if img, ok := agent.DecodeImage(toolID, "", c.Content.MimeType, c.Content.Data, agent.MaxImageBytes); ok {
			out = append(out, img)
		}
	}
	return out
}

// rawOutputText is a rawOutput string, or its "output" field.
func rawOutputText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var v struct {
		Output string `json:"output"`
	}
	_ = json.Unmarshal(raw, &v)
	return v.Output
}

// request handles a request from the agent.
func (p *Parser) request(m *inMessage, badParams bool, line []byte) ([]agent.Event, error) {
	id := agent.CompactJSON(m.ID)
	switch m.Method {
	case "session/request_permission":
		return p.permission(id, &m.Params, badParams, line)
	case "fs/read_text_file", "fs/write_text_file":
		if badParams {
			p.answerError(id, CodeInvalidParams, "invalid "+m.Method+" params")
			return []agent.Event{p.native(m.Method, "", id, line)}, nil
		}
		return p.fs(id, m, line), nil
	}
	p.answerError(id, CodeMethodNotFound, "Method not found: "+m.Method)
	return []agent.Event{p.native(m.Method, "", id, line)}, nil
}

func (p *Parser) permission(id json.RawMessage, params *inParams, badParams bool, line []byte) ([]agent.Event, error) {
	key := string(id)
	if _, dup := p.pending[key]; dup {
		return nil, fmt.Errorf("%w: %s", agent.ErrDuplicateRequest, key)
	}
	if badParams || len(params.Options) == 0 {
		p.answerError(id, CodeInvalidParams, "invalid session/request_permission params")
		return []agent.Event{p.native("session/request_permission", "", id, line)}, errors.New("session/request_permission params: malformed or without options")
	}
	var u sessionUpdate
	if params.ToolCall != nil {
		u = *params.ToolCall
	}
	var out []agent.Event
	if u.ToolCallID != "" {
		t := p.tool(u.ToolCallID)
		t.merge(&u)
		if !t.started && !t.done {
			out = append(out, p.start(t))
		}
	}
	p.answer.Reset()
	in := p.interaction(key, id, &u, params.Options, line)
	p.pending[key] = &pendingRequest{nativeID: id, options: params.Options, toolID: u.ToolCallID}
	p.pendingOrder = append(p.pendingOrder, key)
	out = append(out, agent.Event{Type: agent.EventInteractionRequested, Interaction: in,
		Native: p.nat("session/request_permission", id, nil)})
	if p.opts.AutoDecision != "" {
		ev, err := p.Respond(agent.InteractionResponse{InteractionID: key, Decision: p.opts.AutoDecision, By: "policy"})
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// decisionOf is the decision an ACP option kind stands for.
func decisionOf(kind string) agent.Decision {
	switch kind {
	case KindAllowOnce:
		return agent.DecisionApprove
	case KindAllowAlways:
		return agent.DecisionApproveSession
	case KindRejectOnce, KindRejectAlways:
		return agent.DecisionDecline
	}
	return ""
}

func (p *Parser) interaction(key string, id json.RawMessage, u *sessionUpdate, opts []PermissionOption, line []byte) *agent.Interaction {
	in := &agent.Interaction{ID: key, NativeID: id, Title: oneLine(derefOr(u.Title, "")), Payload: agent.NativePayload(line, MaxNativePayload)}
	for _, o := range opts {
		in.Options = append(in.Options, agent.Option{ID: o.OptionID, Label: o.Name, Kind: decisionOf(o.Kind)})
	}
	var input struct {
		Command string `json:"command"`
		Cwd     string `json:"cwd"`
		Diff    string `json:"diff"`
	}
	_ = json.Unmarshal(u.RawInput, &input)
	in.Cwd = input.Cwd
	var items []toolCallContent
	_ = json.Unmarshal(u.Content, &items)
	var reasons []string
	for _, c := range items {
		if c.Type == "content" && c.Content != nil && c.Content.Text != "" {
			reasons = append(reasons, c.Content.Text)
		}
	}
	in.Reason = strings.Join(reasons, "\n")
	switch u.Kind {
	case "execute":
		in.Kind, in.Command = agent.KindCommandApproval, input.Command
		if in.Command == "" {
			in.Command = in.Title
		}
	case "edit", "delete", "move":
		in.Kind = agent.KindFileChangeApproval
		in.Diff = input.Diff
		if in.Diff == "" {
			in.Diff = diffText(items)
		}
		in.Diff = agent.Truncate(in.Diff, maxDiff)
	default:
		in.Kind = agent.KindPermission
	}
	if in.Title == "" {
		in.Title = "Permission requested"
	}
	return in
}

// diffText renders diff content items as a short unified-diff-like text.
func diffText(items []toolCallContent) string {
	var b strings.Builder
	lines := func(prefix, s string) {
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			b.WriteString(prefix + l + "\n")
		}
	}
	for _, c := range items {
		if c.Type != "diff" {
			continue
		}
		if c.OldText == nil || *c.OldText == "" {
			b.WriteString("+++ " + c.Path + " (new content)\n")
			lines("+", c.NewText)
			continue
		}
		b.WriteString("--- " + c.Path + "\n+++ " + c.Path + "\n")
		lines("-", *c.OldText)
		lines("+", c.NewText)
	}
	return b.String()
}

// Respond answers the pending permission request resp.InteractionID: it
// queues the JSON-RPC answer (see TakeOutgoing) and returns the
// interaction.resolved event. resp.OptionID, when set, must be one of the
// offered option ids; otherwise the decision picks the option by kind:
// approve → allow_once (else allow_always), approve_session → allow_always
// (else allow_once), decline or anything unknown → reject_once (else
// reject_always, else the cancelled outcome). cancel answers cancelled and
// also cancels the turn (session/cancel; the other pending requests are
// answered cancelled too).
func (p *Parser) Respond(resp agent.InteractionResponse) (agent.Event, error) {
	pr, ok := p.pending[resp.InteractionID]
	if !ok {
		return agent.Event{}, fmt.Errorf("%w: %q", agent.ErrUnknownInteraction, resp.InteractionID)
	}
	if resp.Decision == agent.DecisionCancel && resp.OptionID == "" {
		evs := p.cancel(resp.InteractionID, resp.By)
		return evs[0], nil
	}
	var chosen *PermissionOption
	if resp.OptionID != "" {
		for i := range pr.options {
			if pr.options[i].OptionID == resp.OptionID {
				chosen = &pr.options[i]
			}
		}
		if chosen == nil {
			return agent.Event{}, fmt.Errorf("%w: %q for %q", ErrUnknownOption, resp.OptionID, resp.InteractionID)
		}
	} else {
		var kinds []string
		switch resp.Decision {
		case agent.DecisionApprove:
			kinds = []string{KindAllowOnce, KindAllowAlways}
		case agent.DecisionApproveSession:
			kinds = []string{KindAllowAlways, KindAllowOnce}
		default:
			kinds = []string{KindRejectOnce, KindRejectAlways}
		}
		chosen = pickOption(pr.options, kinds)
	}
	p.drop(resp.InteractionID)
	if chosen == nil {
		p.answerOutcome(pr.nativeID, outcome{Outcome: "cancelled"})
		return p.resolved(resp.InteractionID, pr, agent.StatusDeclined, agent.DecisionDecline, resp.By), nil
	}
	p.answerOutcome(pr.nativeID, outcome{Outcome: "selected", OptionID: chosen.OptionID})
	d := decisionOf(chosen.Kind)
	status := agent.StatusDeclined
	if d == agent.DecisionApprove || d == agent.DecisionApproveSession {
		status = agent.StatusApproved
	}
	if d == "" {
		d = resp.Decision
	}
	return p.resolved(resp.InteractionID, pr, status, d, resp.By), nil
}

func pickOption(opts []PermissionOption, kinds []string) *PermissionOption {
	for _, k := range kinds {
		for i := range opts {
			if opts[i].Kind == k {
				return &opts[i]
			}
		}
	}
	return nil
}

// Cancel cancels the turn the ACP way: it queues the session/cancel
// notification, then answers every pending permission request with the
// cancelled outcome, and returns their interaction.resolved events. The
// agent then answers session/prompt with stopReason "cancelled".
func (p *Parser) Cancel() []agent.Event { return p.cancel("", "") }

// Cancelling reports whether the turn was cancelled.
func (p *Parser) Cancelling() bool { return p.cancelling }

func (p *Parser) cancel(first, by string) []agent.Event {
	var out []agent.Event
	if !p.cancelling {
		p.cancelling = true
		if p.sessionID != "" {
			b, _ := json.Marshal(rpcNotification{JSONRPC: "2.0", Method: "session/cancel", Params: sessionIDParams{SessionID: p.sessionID}})
			p.outgoing.Push(b)
		}
	}
	keys := slices.Clone(p.pendingOrder)
	if first != "" {
		keys = append([]string{first}, slices.DeleteFunc(keys, func(k string) bool { return k == first })...)
	}
	for _, key := range keys {
		pr := p.pending[key]
		p.drop(key)
		p.answerOutcome(pr.nativeID, outcome{Outcome: "cancelled"})
		d, who := agent.Decision(""), ""
		if key == first {
			d, who = agent.DecisionCancel, by
		}
		out = append(out, p.resolved(key, pr, agent.StatusCancelled, d, who))
	}
	return out
}

func (p *Parser) drop(key string) {
	delete(p.pending, key)
	p.pendingOrder = slices.DeleteFunc(p.pendingOrder, func(k string) bool { return k == key })
}

func (p *Parser) resolved(key string, pr *pendingRequest, status string, d agent.Decision, by string) agent.Event {
	return agent.Event{
		Type:       agent.EventInteractionResolved,
		Resolution: &agent.Resolution{InteractionID: key, Status: status, Decision: d, By: by},
		Native:     p.nat("session/request_permission", pr.nativeID, nil),
	}
}

func (p *Parser) answerOutcome(id json.RawMessage, o outcome) {
	p.queue(rpcResponse{JSONRPC: "2.0", ID: id, Result: permissionOutcome{Outcome: o}})
}

func (p *Parser) answerError(id json.RawMessage, code int64, msg string) {
	p.queue(rpcResponse{JSONRPC: "2.0", ID: id, Error: &jsonrpc.Error{Code: code, Message: msg}})
}

func (p *Parser) queue(v any) {
	b, err := json.Marshal(v)
	if err == nil {
		p.outgoing.Push(b)
	}
}

// fs serves fs/read_text_file and fs/write_text_file through opts.FS.
func (p *Parser) fs(id json.RawMessage, m *inMessage, line []byte) []agent.Event {
	if p.opts.FS == nil {
		p.answerError(id, CodeMethodNotFound, "Method not found: "+m.Method+" (the client declared no fs capability)")
		return []agent.Event{p.native(m.Method, "", id, line)}
	}
	var payload []byte
	switch m.Method {
	case "fs/read_text_file":
		r := &m.Params
		text, err := p.opts.FS.ReadTextFile(r.Path, r.Line, r.Limit)
		if err != nil {
			p.answerError(id, fsErrorCode(err), err.Error())
		} else {
			p.queue(rpcResponse{JSONRPC: "2.0", ID: id, Result: map[string]string{"content": text}})
		}
		payload, _ = json.Marshal(map[string]any{"path": r.Path, "ok": err == nil})
	case "fs/write_text_file":
		w := &m.Params
		err := p.opts.FS.WriteTextFile(w.Path, w.Content)
		if err != nil {
			p.answerError(id, fsErrorCode(err), err.Error())
		} else {
			p.queue(rpcResponse{JSONRPC: "2.0", ID: id, Result: struct{}{}})
		}
		payload, _ = json.Marshal(map[string]any{"path": w.Path, "bytes": len(w.Content), "ok": err == nil})
	}
	return []agent.Event{{Type: agent.EventProviderNative, Native: p.nat(m.Method, id, payload)}}
}

func (p *Parser) system(subtype, text string, payload json.RawMessage) agent.Event {
	return agent.Event{Type: agent.EventSystem, Subtype: subtype, Text: text, Native: p.nat(subtype, nil, payload)}
}

func (p *Parser) nat(kind string, id, payload json.RawMessage) *agent.Native {
	return &agent.Native{Provider: p.opts.Provider, Kind: kind, ID: id, Payload: payload}
}

// native builds a provider.native event with a bounded payload.
func (p *Parser) native(typ, sub string, id json.RawMessage, line []byte) agent.Event {
	kind := typ
	if sub != "" {
		kind += "/" + sub
	}
	return agent.Event{Type: agent.EventProviderNative, Subtype: sub, Native: p.nat(kind, id, agent.NativePayload(line, MaxNativePayload))}
}

func derefOr(s *string, def string) string {
	if s == nil {
		return def
	}
	return *s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
