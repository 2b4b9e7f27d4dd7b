// Parser: app-server notifications → agent.Events.

package codexharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.completed output text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native and interaction payloads.
	MaxNativePayload = 8 << 10
	// maxDiff bounds a file-change diff on tool.started and approvals.
	maxDiff = 8 << 10
)

// Parser turns app-server notifications into normalized events. It keeps the
// per-run state (thread, turn, text already streamed per item, open tool
// items, usage) and is used from one goroutine. Use NewParser.
//
// Notifications about another thread (a subagent's) become provider.native,
// so that their text never mixes into the run's answer.
type Parser struct {
	provider agent.ProviderID

	threadID string
	turnID   string
	model    string

	texts map[string]*textState // item id → text streamed so far
	tools map[string]*toolState // item id → open tool item

	usage     agent.Usage
	lastError string
	lastText  string // the last completed agent message
	terminal  agent.EventType
}

type textState struct {
	typ     agent.EventType
	emitted []byte
	part    int
	done    bool
}

type toolState struct {
	name string
	diff string
	done bool
}

// NewParser returns a parser for one run of provider.
func NewParser(provider agent.ProviderID) *Parser {
	return &Parser{
		provider: provider,
		texts:    map[string]*textState{},
		tools:    map[string]*toolState{},
	}
}

// SetThread records the run's thread (from the thread/start, resume or fork
// result) and its model.
func (p *Parser) SetThread(id, model string) {
	p.threadID = id
	if model != "" {
		p.model = model
	}
}

// SetTurn records the run's turn (from the turn/start result).
func (p *Parser) SetTurn(id string) { p.turnID = id }

// ThreadID is the run's thread id, once known.
func (p *Parser) ThreadID() string { return p.threadID }

// TurnID is the run's turn id, once known.
func (p *Parser) TurnID() string { return p.turnID }

// Model is the thread's model, once known.
func (p *Parser) Model() string { return p.model }

// Terminal is the terminal event type turn/completed produced, if any.
func (p *Parser) Terminal() agent.EventType { return p.terminal }

// LastError is the message of the last error notification.
func (p *Parser) LastError() string { return p.lastError }

// fileDiff is the diff of the fileChange item id, from its item/started.
func (p *Parser) fileDiff(itemID string) string {
	if t, ok := p.tools[itemID]; ok {
		return t.diff
	}
	return ""
}

// ours reports whether a notification about thread belongs to this run.
func (p *Parser) ours(thread string) bool {
	return thread == "" || p.threadID == "" || thread == p.threadID
}

// Parse maps one notification. raw is the whole line, used (bounded) as the
// payload of provider.native. Params that do not decode as the method's shape
// return an error and no events; the caller logs and skips the line.
func (p *Parser) Parse(method string, params json.RawMessage, raw []byte) ([]agent.Event, error) {
	return p.parse(method, paramsOf(params), raw)
}

// paramsOf is raw params, decoded as the method's type when read.
func paramsOf(raw json.RawMessage) params { return params{raw: raw} }

// parse is Parse with the params decoded with the line (decodeLine) or not.
func (p *Parser) parse(method string, params params, raw []byte) ([]agent.Event, error) {
	switch method {
	case "item/agentMessage/delta", "item/plan/delta":
		return ofThread(p, method, params, raw, func(v *deltaParams) ([]agent.Event, error) { return p.delta(method, agent.EventAssistantDelta, v, raw) })
	case "item/reasoning/summaryTextDelta", "item/reasoning/textDelta":
		return ofThread(p, method, params, raw, func(v *deltaParams) ([]agent.Event, error) { return p.delta(method, agent.EventReasoningDelta, v, raw) })
	case "item/reasoning/summaryPartAdded":
		return ofThread(p, method, params, raw, func(v *deltaParams) ([]agent.Event, error) { return p.reasoningPart(method, v, raw) })
	case "item/commandExecution/outputDelta", "item/fileChange/outputDelta", "item/mcpToolCall/progress":
		return ofThread(p, method, params, raw, func(v *deltaParams) ([]agent.Event, error) { return p.toolOutput(method, v, raw) })
	case "item/started":
		return ofThread(p, method, params, raw, func(v *itemParams) ([]agent.Event, error) { return p.itemStarted(method, v, raw) })
	case "item/completed":
		return ofThread(p, method, params, raw, func(v *itemParams) ([]agent.Event, error) { return p.itemCompleted(method, v, raw) })
	case "thread/tokenUsage/updated":
		return ofThread(p, method, params, raw, func(v *tokenUsageParams) ([]agent.Event, error) { return p.tokenUsage(method, v, raw) })
	case "error":
		return ofThread(p, method, params, raw, func(v *errorParams) ([]agent.Event, error) { return p.errorNotification(method, v, raw) })
	case "warning", "configWarning":
		return ofThread(p, method, params, raw, func(v *warningParams) ([]agent.Event, error) { return p.warning(method, v, raw) })
	case "thread/started":
		return p.threadStarted(method, params, raw)
	case "turn/started":
		var v turnParams
		if err := params.decode(method, &v); err != nil {
			return nil, err
		}
		if p.ours(v.ThreadID) && p.turnID == "" {
			p.turnID = v.Turn.ID
		}
		return p.native(method, raw), nil
	case "turn/completed":
		return ofThread(p, method, params, raw, func(v *turnParams) ([]agent.Event, error) { return p.turnCompleted(method, v, raw) })
	case "turn/plan/updated":
		return ofThread(p, method, params, raw, func(v *planParams) ([]agent.Event, error) { return p.planUpdated(method, v, raw) })
	case "model/rerouted":
		var v modelReroutedParams
		if err := params.decode(method, &v); err != nil {
			return nil, err
		}
		ev := p.native(method, raw)
		ev[0].Type, ev[0].Subtype = agent.EventSystem, "model_rerouted"
		ev[0].Text = fmt.Sprintf("model rerouted from %s to %s", v.FromModel, v.ToModel)
		if v.Reason != "" {
			ev[0].Text += " (" + v.Reason + ")"
		}
		return ev, nil
	}
	return p.native(method, raw), nil
}

// threaded is a notification's params that name their thread.
type threaded interface{ thread() string }

// ofThread decodes params as T and hands them to f when the notification is
// about this run's thread; another thread's (a subagent's) is provider.native.
func ofThread[T any, P interface {
	*T
	threaded
}](p *Parser, method string, params params, raw []byte, f func(v P) ([]agent.Event, error)) ([]agent.Event, error) {
	v := P(new(T))
	if err := params.decode(method, v); err != nil {
		return nil, err
	}
	if !p.ours(v.thread()) {
		return p.native(method, raw), nil
	}
	return f(v)
}

func decode(method string, params json.RawMessage, v any) error {
	if len(params) == 0 {
		return fmt.Errorf("%s: missing params", method)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return fmt.Errorf("%s params: %w", method, err)
	}
	return nil
}

func (p *Parser) delta(method string, typ agent.EventType, v *deltaParams, raw []byte) ([]agent.Event, error) {
	if v.Delta == "" {
		return nil, nil
	}
	ts := p.text(v.ItemID, typ)
	var sep string
	if typ == agent.EventReasoningDelta && v.SummaryIndex > ts.part {
		ts.part = v.SummaryIndex
		if len(ts.emitted) > 0 && !bytes.HasSuffix(ts.emitted, []byte("\n\n")) {
			sep = "\n\n"
		}
	}
	text := sep + v.Delta
	ts.emitted = append(ts.emitted, text...)
	return []agent.Event{{Type: typ, Text: text}}, nil
}

func (p *Parser) reasoningPart(method string, v *deltaParams, raw []byte) ([]agent.Event, error) {
	ts := p.text(v.ItemID, agent.EventReasoningDelta)
	if v.SummaryIndex <= ts.part {
		return nil, nil
	}
	ts.part = v.SummaryIndex
	if len(ts.emitted) == 0 || bytes.HasSuffix(ts.emitted, []byte("\n\n")) {
		return nil, nil
	}
	ts.emitted = append(ts.emitted, "\n\n"...)
	return []agent.Event{{Type: agent.EventReasoningDelta, Text: "\n\n"}}, nil
}

func (p *Parser) text(itemID string, typ agent.EventType) *textState {
	ts, ok := p.texts[itemID]
	if !ok {
		ts = &textState{typ: typ}
		p.texts[itemID] = ts
	}
	return ts
}

// completeText emits the part of full not streamed yet for item id.
func (p *Parser) completeText(id string, typ agent.EventType, full string) []agent.Event {
	ts := p.text(id, typ)
	if ts.done {
		return nil
	}
	ts.done = true
	if full == "" {
		return nil
	}
	if !strings.HasPrefix(full, string(ts.emitted)) {
		// The snapshot disagrees with what was streamed; never repeat text.
		return nil
	}
	rest := full[len(ts.emitted):]
	if rest == "" {
		return nil
	}
	ts.emitted = append(ts.emitted, rest...)
	return []agent.Event{{Type: typ, Text: rest}}
}

func (p *Parser) toolOutput(method string, v *deltaParams, raw []byte) ([]agent.Event, error) {
	text := v.Delta
	if method == "item/mcpToolCall/progress" {
		text = v.Message + "\n"
	}
	if text == "" {
		return nil, nil
	}
	name := ""
	if t, ok := p.tools[v.ItemID]; ok {
		name = t.name
	}
	return []agent.Event{{
		Type:   agent.EventToolOutput,
		Text:   text,
		Tool:   &agent.Tool{ID: v.ItemID, Name: name},
		Native: &agent.Native{Provider: p.provider, Kind: method, ID: agent.JSONString(v.ItemID)},
	}}, nil
}

func (p *Parser) itemStarted(method string, v *itemParams, raw []byte) ([]agent.Event, error) {
	it := &v.Item
	switch it.Type {
	case "agentMessage", "plan":
		p.text(it.ID, agent.EventAssistantDelta)
		return nil, nil
	case "reasoning":
		p.text(it.ID, agent.EventReasoningDelta)
		return nil, nil
	}
	if ev, ok := p.toolStarted(method, it); ok {
		return []agent.Event{ev}, nil
	}
	return p.native(method+"/"+it.Type, raw), nil
}

func (p *Parser) itemCompleted(method string, v *itemParams, raw []byte) ([]agent.Event, error) {
	it := &v.Item
	switch it.Type {
	case "agentMessage":
		p.lastText = it.Text
		return p.completeText(it.ID, agent.EventAssistantDelta, it.Text), nil
	case "plan":
		return p.completeText(it.ID, agent.EventAssistantDelta, it.Text), nil
	case "reasoning":
		return p.completeText(it.ID, agent.EventReasoningDelta, reasoningText(it)), nil
	case "imageGeneration":
		if it.Result != nil && it.Result.Inline != "" {
			if img, ok := agent.DecodeImage(it.ID, "", "", it.Result.Inline, agent.MaxImageBytes); ok {
				return []agent.Event{p.image(method, img)}, nil
			}
		}
		return p.native(method+"/"+it.Type, raw), nil
	}
	if !isTool(it.Type) {
		return p.native(method+"/"+it.Type, raw), nil
	}
	var out []agent.Event
	t, ok := p.tools[it.ID]
	if !ok {
		ev, _ := p.toolStarted("item/started", it)
		out = append(out, ev)
		t = p.tools[it.ID]
	}
	if t.done {
		return nil, nil
	}
	t.done = true
	output, isErr := toolResult(it)
	out = append(out, agent.Event{
		Type:   agent.EventToolCompleted,
		Tool:   &agent.Tool{ID: it.ID, Name: t.name, Output: agent.Truncate(output, MaxToolOutput), IsError: isErr},
		Native: &agent.Native{Provider: p.provider, Kind: method + "/" + it.Type, ID: agent.JSONString(it.ID)},
	})
	for _, img := range resultImages(it) {
		out = append(out, p.image(method+"/"+it.Type, img))
	}
	return out, nil
}

// image is the image event of img, made by a native item.
func (p *Parser) image(kind string, img *agent.MadeImage) agent.Event {
	return agent.Event{Type: agent.EventImage, Image: img,
		Native: &agent.Native{Provider: p.provider, Kind: kind, ID: agent.JSONString(img.ToolID)}}
}

// resultImages are the images of a tool's result: an MCP tool's image
// blocks, a dynamic tool's inline (data: URL) images.
func resultImages(it *wireItem) []*agent.MadeImage {
	var items []contentItem
	switch it.Type {
	case "mcpToolCall":
		if it.Result != nil {
			items = it.Result.Content
		}
	case "dynamicToolCall":
		items = it.ContentItems
	}
	var out []*agent.MadeImage
	for _, c := range items {
		var (
			img *agent.MadeImage
			ok  bool
		)
		switch {
		case c.Type == "image" && c.Data != "":
			img, ok = agent.DecodeImage(it.ID, "", c.MimeType, c.Data, agent.MaxImageBytes)
		case c.Type == "inputImage" && strings.HasPrefix(c.ImageURL, "data:"):
			img, ok = agent.DecodeImage(it.ID, "", "", c.ImageURL, agent.MaxImageBytes)
		}
		if ok {
			out = append(out, img)
		}
	}
	return out
}

func isTool(typ string) bool {
	switch typ {
	case "commandExecution", "fileChange", "mcpToolCall", "dynamicToolCall", "webSearch", "collabAgentToolCall":
		return true
	}
	return false
}

// toolStarted maps a tool item to tool.started and remembers it.
func (p *Parser) toolStarted(method string, it *wireItem) (agent.Event, bool) {
	if !isTool(it.Type) {
		return agent.Event{}, false
	}
	var (
		name, arg string
		input     any
		diff      string
	)
	switch it.Type {
	case "commandExecution":
		name, arg = "shell", displayCommand(it.Command, it.CommandActions)
		input = map[string]string{"command": it.Command, "cwd": it.Cwd}
	case "fileChange":
		name = "apply_patch"
		paths := make([]string, 0, len(it.Changes))
		for _, c := range it.Changes {
			paths = append(paths, c.Path)
		}
		arg, diff = strings.Join(paths, ", "), changesDiff(it.Changes)
		input = map[string]any{"paths": paths, "diff": diff}
	case "mcpToolCall":
		name, arg, input = "mcp:"+it.Server+"/"+it.Tool, compactText(it.Arguments), it.Arguments
	case "dynamicToolCall":
		name = it.Tool
		if it.Namespace != nil && *it.Namespace != "" {
			name = *it.Namespace + "/" + it.Tool
		}
		arg, input = compactText(it.Arguments), it.Arguments
	case "webSearch":
		name, arg, input = "web_search", it.Query, map[string]string{"query": it.Query}
	case "collabAgentToolCall":
		name = "agent:" + it.Tool
		if it.Prompt != nil {
			arg = *it.Prompt
		}
		in := map[string]any{"tool": it.Tool, "sender_thread_id": it.SenderThreadID, "receiver_thread_ids": it.ReceiverThreadIDs}
		if it.Prompt != nil {
			in["prompt"] = agent.Truncate(*it.Prompt, 1024)
		}
		if it.Model != nil {
			in["model"] = *it.Model
		}
		input = in
	}
	p.tools[it.ID] = &toolState{name: name, diff: diff}
	var in json.RawMessage
	if input != nil {
		in, _ = json.Marshal(input)
	}
	summary := name
	if arg = strings.Join(strings.Fields(arg), " "); arg != "" {
		summary += ": " + agent.Truncate(arg, 200)
	}
	return agent.Event{
		Type:   agent.EventToolStarted,
		Tool:   &agent.Tool{ID: it.ID, Name: name, Input: agent.CompactJSON(in), Summary: summary},
		Native: &agent.Native{Provider: p.provider, Kind: method + "/" + it.Type, ID: agent.JSONString(it.ID)},
	}, true
}

// displayCommand prefers the parsed command over the /bin/bash -lc wrapper.
func displayCommand(command string, actions []commandAction) string {
	if len(actions) > 0 {
		parts := make([]string, 0, len(actions))
		for _, a := range actions {
			if a.Command != "" {
				parts = append(parts, a.Command)
			}
		}
		if len(parts) > 0 {
			return strings.Join(parts, " && ")
		}
	}
	return command
}

// changesDiff renders file changes as a bounded unified-diff-like text.
func changesDiff(changes []fileChange) string {
	var b strings.Builder
	for _, c := range changes {
		switch c.Kind.Type {
		case "add":
			b.WriteString("+++ " + c.Path + " (new file)\n")
		case "delete":
			b.WriteString("--- " + c.Path + " (deleted)\n")
		default:
			to := c.Path
			if c.Kind.MovePath != nil && *c.Kind.MovePath != "" {
				to = *c.Kind.MovePath
			}
			b.WriteString("--- " + c.Path + "\n+++ " + to + "\n")
		}
		b.WriteString(c.Diff)
		if c.Diff != "" && !strings.HasSuffix(c.Diff, "\n") {
			b.WriteByte('\n')
		}
	}
	return agent.Truncate(b.String(), maxDiff)
}

// toolResult is a completed tool item's output text and error flag.
func toolResult(it *wireItem) (string, bool) {
	failed := it.Status == "failed" || it.Status == "declined" || it.Status == "errored"
	switch it.Type {
	case "commandExecution":
		out := ""
		if it.AggregatedOutput != nil {
			out = *it.AggregatedOutput
		}
		if it.Status == "declined" && out == "" {
			out = "declined"
		}
		return out, failed || (it.ExitCode != nil && *it.ExitCode != 0)
	case "fileChange":
		if it.Status == "declined" {
			return "declined", true
		}
		return it.Status, failed
	case "mcpToolCall":
		if it.Error != nil {
			return it.Error.Message, true
		}
		if it.Result != nil {
			return itemsText(it.Result.Content), failed
		}
		return "", failed
	case "dynamicToolCall":
		return itemsText(it.ContentItems), failed || (it.Success != nil && !*it.Success)
	case "webSearch":
		return it.Query, failed
	case "collabAgentToolCall":
		ids := make([]string, 0, len(it.AgentsStates))
		for id := range it.AgentsStates {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		var b strings.Builder
		for _, id := range ids {
			st := it.AgentsStates[id]
			b.WriteString(id + ": " + st.Status)
			if st.Message != nil && *st.Message != "" {
				b.WriteString(": " + *st.Message)
			}
			b.WriteByte('\n')
		}
		return b.String(), failed
	}
	return "", failed
}

func itemsText(items []contentItem) string {
	var parts []string
	for _, c := range items {
		switch c.Type {
		case "text", "inputText":
			parts = append(parts, c.Text)
		case "image", "inputImage":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}

func reasoningText(it *wireItem) string {
	if len(it.Summary) > 0 {
		return strings.Join(it.Summary, "\n\n")
	}
	var content []string
	_ = json.Unmarshal(it.Content, &content)
	return strings.Join(content, "\n\n")
}

func (p *Parser) tokenUsage(method string, v *tokenUsageParams, raw []byte) ([]agent.Event, error) {
	// Only this turn's model calls count; a resumed thread first reports the
	// restored totals under the previous turn's id.
	if p.turnID == "" || v.TurnID != p.turnID {
		return p.native(method, raw), nil
	}
	l := v.TokenUsage.Last
	p.usage.InputTokens += l.InputTokens
	p.usage.OutputTokens += l.OutputTokens
	p.usage.CacheReadTokens += l.CachedInputTokens
	p.usage.CacheCreationTokens += l.CacheWriteInputTokens
	p.usage.NumTurns++
	u := p.usage
	return []agent.Event{{
		Type:   agent.EventUsageUpdated,
		Usage:  &u,
		Native: &agent.Native{Provider: p.provider, Kind: method, ID: agent.JSONString(v.TurnID)},
	}}, nil
}

func (p *Parser) errorNotification(method string, v *errorParams, raw []byte) ([]agent.Event, error) {
	msg := readableError(v.Error.Message)
	ev := agent.Event{Type: agent.EventSystem, Text: msg, Native: &agent.Native{Provider: p.provider, Kind: method, Payload: agent.NativePayload(raw, MaxNativePayload)}}
	if v.WillRetry {
		ev.Subtype = "retrying"
		if d := v.Error.AdditionalDetails; d != nil && *d != "" {
			ev.Text += " (" + *d + ")"
		}
		return []agent.Event{ev}, nil
	}
	p.lastError = msg
	ev.Subtype = "error"
	return []agent.Event{ev}, nil
}

// readableError unwraps an upstream JSON error body ({"error":{"message":…}}).
func readableError(msg string) string {
	t := strings.TrimSpace(msg)
	if strings.HasPrefix(t, "{") {
		var v struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(t), &v) == nil && v.Error.Message != "" {
			return v.Error.Message
		}
	}
	return msg
}

func (p *Parser) warning(method string, v *warningParams, raw []byte) ([]agent.Event, error) {
	text := v.Message
	if text == "" {
		text = v.Summary
		if v.Details != nil && *v.Details != "" {
			text += ": " + *v.Details
		}
	}
	return []agent.Event{{Type: agent.EventSystem, Subtype: "warning", Text: text, Native: &agent.Native{Provider: p.provider, Kind: method}}}, nil
}

func (p *Parser) threadStarted(method string, params params, raw []byte) ([]agent.Event, error) {
	var v threadStartedParams
	if err := params.decode(method, &v); err != nil {
		return nil, err
	}
	if v.Thread.ID == "" || v.Thread.ID == p.threadID || p.threadID != "" {
		// Our thread (already reported from the thread result) or a
		// subagent's thread.
		return p.native(method, raw), nil
	}
	p.threadID = v.Thread.ID
	if v.Thread.Model != "" {
		p.model = v.Thread.Model
	}
	return []agent.Event{{Type: agent.EventSessionUpdated, SessionID: v.Thread.ID, Model: p.model,
		Native: &agent.Native{Provider: p.provider, Kind: method, ID: agent.JSONString(v.Thread.ID)}}}, nil
}

// planStatus maps a TurnPlanStepStatus; an unknown status is pending.
func planStatus(s string) agent.PlanStatus {
	switch s {
	case "inProgress", "in_progress":
		return agent.PlanInProgress
	case "completed":
		return agent.PlanCompleted
	}
	return agent.PlanPending
}

// planUpdated maps the turn's whole plan (the update_plan tool) to
// plan.updated; the explanation, when given, is the plan's title.
func (p *Parser) planUpdated(method string, v *planParams, raw []byte) ([]agent.Event, error) {
	plan := &agent.Plan{Title: agent.Truncate(strings.Join(strings.Fields(deref(v.Explanation)), " "), 200), Items: []agent.PlanItem{}}
	for _, st := range v.Plan {
		plan.Items = append(plan.Items, agent.PlanItem{Text: st.Step, Status: planStatus(st.Status)})
	}
	return []agent.Event{{Type: agent.EventPlanUpdated, Plan: plan,
		Native: &agent.Native{Provider: p.provider, Kind: method, ID: agent.JSONString(v.TurnID)}}}, nil
}

func (p *Parser) turnCompleted(method string, v *turnParams, raw []byte) ([]agent.Event, error) {
	if p.turnID != "" && v.Turn.ID != p.turnID {
		return p.native(method, raw), nil
	}
	if p.terminal != "" {
		return nil, nil
	}
	if p.turnID == "" {
		p.turnID = v.Turn.ID
	}
	var out []agent.Event
	// Flush what the summary holds but was never streamed or completed.
	for _, rawItem := range v.Turn.Items {
		var it wireItem
		if json.Unmarshal(rawItem, &it) != nil {
			continue
		}
		switch it.Type {
		case "agentMessage":
			p.lastText = it.Text
			out = append(out, p.completeText(it.ID, agent.EventAssistantDelta, it.Text)...)
		case "plan":
			out = append(out, p.completeText(it.ID, agent.EventAssistantDelta, it.Text)...)
		}
	}
	payload, _ := json.Marshal(struct {
		Status     string `json:"status"`
		DurationMs *int64 `json:"durationMs,omitempty"`
	}{v.Turn.Status, v.Turn.DurationMs})
	nat := &agent.Native{Provider: p.provider, Kind: method, ID: agent.JSONString(v.Turn.ID), Payload: payload}
	switch v.Turn.Status {
	case "completed":
		p.terminal = agent.EventRunCompleted
		return append(out, agent.Event{Type: agent.EventRunCompleted, Text: p.lastText, Native: nat}), nil
	case "interrupted":
		p.terminal = agent.EventRunInterrupted
		return append(out, agent.Event{Type: agent.EventRunInterrupted, Text: "interrupted", Native: nat}), nil
	case "failed":
		p.terminal = agent.EventRunFailed
		msg := p.lastError
		if v.Turn.Error != nil && v.Turn.Error.Message != "" {
			msg = readableError(v.Turn.Error.Message)
		}
		if msg == "" {
			msg = "turn failed"
		}
		return append(out, agent.Event{Type: agent.EventRunFailed, Text: msg, Native: nat}), nil
	}
	// Never a success by accident.
	p.terminal = agent.EventRunFailed
	return append(out, agent.Event{Type: agent.EventRunFailed, Text: fmt.Sprintf("unknown turn status %q", v.Turn.Status), Native: nat}), nil
}

// native builds a provider.native event with a bounded payload.
func (p *Parser) native(kind string, raw []byte) []agent.Event {
	return []agent.Event{{Type: agent.EventProviderNative, Subtype: kind, Native: &agent.Native{
		Provider: p.provider, Kind: kind, Payload: agent.NativePayload(raw, MaxNativePayload),
	}}}
}

// compactText renders JSON arguments as one short line.
func compactText(raw json.RawMessage) string {
	c := agent.CompactJSON(raw)
	if string(c) == "null" {
		return ""
	}
	return string(c)
}
