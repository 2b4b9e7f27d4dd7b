// Server-initiated requests: approvals, questions, elicitations and the rest
// become agent.Interactions; answers go back with the original JSON-RPC id.

package codexharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// codeDeclined is the JSON-RPC error code of a declined server request.
const codeDeclined = -32000

// Resolvers recorded in Resolution.By when nobody from the chat answered.
const (
	ByPolicy = "policy" // the run's Approval policy answered (no Responses channel)
	ByAgent  = "agent"  // the server withdrew the request (serverRequest/resolved)
)

// Answer keys of InteractionResponse.Answers with a meaning beyond question ids.
const (
	// AnswerJSON carries a raw JSON result: the answer to an unknown request
	// method, a dynamic tool call's full result, or an elicitation's content.
	AnswerJSON = "json"
	// AnswerOutput is a dynamic tool call's text output.
	AnswerOutput = "output"
)

// Errors about server requests and their answers.
var (
	// ErrBadAnswer is returned for an answer that cannot be sent (e.g. invalid
	// JSON for an unknown method); the request stays pending.
	ErrBadAnswer = errors.New("answer cannot be sent")
)

// pendingRequest is an open server request.
type pendingRequest struct {
	id       string
	nativeID json.RawMessage
	method   string
	kind     agent.InteractionKind

	permissions json.RawMessage  // item/permissions/requestApproval: what was asked
	mcpApproval bool             // an MCP tool-call approval elicitation
	form        []formField      // an elicitation form's fields, in question order
	questions   []agent.Question // requestUserInput: what was asked
	url         bool             // a URL elicitation (accept carries no content)
	// autoResolve is the agent's own deadline (requestUserInput
	// autoResolutionMs): unanswered by then, the harness answers it empty.
	autoResolve time.Duration
	// refusal, when set, is why the request cannot be answered from the
	// chat: it is declined at once with this text.
	refusal string
}

// interactions tracks the server requests of one connection.
type interactions struct {
	provider agent.ProviderID
	label    string
	pending  procrun.Ledger[*pendingRequest] // by Threadline id
	seen     map[string]bool                 // native ids seen on this connection
	now      func() time.Time
}

func newInteractions(provider agent.ProviderID, label string) *interactions {
	return &interactions{provider: provider, label: label, seen: map[string]bool{}, now: time.Now}
}

// interactionID is Threadline's id for a native request id: "rpc-7" for the
// integer 7 and "rpc-s-7" for the string "7", so the two never collide.
func interactionID(nativeID json.RawMessage) string {
	var s string
	if json.Unmarshal(nativeID, &s) == nil {
		return "rpc-s-" + s
	}
	return "rpc-" + string(nativeID)
}

// outcome is what answering a request produced.
type outcome struct {
	events []agent.Event
	lines  [][]byte
	// interrupt asks the harness to interrupt the turn (a cancel on a request
	// that has no native cancel).
	interrupt bool
	// autoResolve asks the harness to call autoResolved(id) after the
	// request's own deadline.
	autoResolve map[string]time.Duration
}

// request turns server request m into interaction.requested. With a policy
// decision (no one can be asked) it also answers at once and resolves. A
// request the harness answers by itself (currentTime/read) asks nobody; one
// that cannot be answered from the chat is shown and declined at once.
func (in *interactions) request(m *jsonrpc.Message, line []byte, p *Parser, policy agent.Decision) (outcome, error) {
	key := string(m.ID)
	if in.seen[key] {
		return outcome{}, fmt.Errorf("%w: %s (%s)", agent.ErrDuplicateRequest, m.ID, m.Method)
	}
	in.seen[key] = true
	pr := &pendingRequest{id: interactionID(m.ID), nativeID: m.ID, method: m.Method}
	if m.Method == "currentTime/read" {
		// Nothing to ask: the harness knows the time.
		b, _ := json.Marshal(map[string]int64{"currentTimeAt": in.now().Unix()})
		l, err := jsonrpc.EncodeResult(m.ID, b)
		return outcome{
			events: []agent.Event{{Type: agent.EventProviderNative, Subtype: m.Method, Native: &agent.Native{Provider: in.provider, Kind: m.Method, ID: m.ID, Payload: agent.NativePayload(line, MaxNativePayload)}}},
			lines:  [][]byte{l},
		}, err
	}
	it := &agent.Interaction{ID: pr.id, NativeID: m.ID, Payload: agent.NativePayload(line, MaxNativePayload)}
	if err := in.describe(pr, it, m.Params, p); err != nil {
		// Malformed params of a known method: still ask, as an unknown request.
		pr.kind, pr.refusal = agent.KindUnknown, ""
		it.Title = fmt.Sprintf("%s sent a request it could not describe: %s", in.label, m.Method)
		it.Options = genericOptions()
	}
	it.Kind = pr.kind
	if pr.autoResolve > 0 {
		it.AutoResolveAt = in.now().Add(pr.autoResolve)
	}
	in.pending.Add(pr.id, pr)
	out := outcome{events: []agent.Event{{
		Type:        agent.EventInteractionRequested,
		Interaction: it,
		Native:      &agent.Native{Provider: in.provider, Kind: m.Method, ID: m.ID},
	}}}
	if pr.refusal != "" {
		policy = agent.DecisionDecline
	}
	if policy == "" {
		if pr.autoResolve > 0 {
			out.autoResolve = map[string]time.Duration{pr.id: pr.autoResolve}
		}
		return out, nil
	}
	d := policy
	if policy == agent.DecisionApprove && !approvable(pr) {
		d = agent.DecisionDecline
	}
	res, err := in.respond(agent.InteractionResponse{InteractionID: pr.id, Decision: d, By: ByPolicy})
	if err != nil {
		return out, err
	}
	out.events = append(out.events, res.events...)
	out.lines = append(out.lines, res.lines...)
	return out, nil
}

// autoResolved answers request id with no answers once its own deadline
// passed (nothing if it was answered or withdrawn meanwhile): the agent goes
// on without them, and the request resolves timed_out by the agent.
func (in *interactions) autoResolved(id string) outcome {
	pr, ok := in.pending.Get(id)
	if !ok {
		return outcome{}
	}
	line, err := jsonrpc.EncodeResult(pr.nativeID, json.RawMessage(`{"answers":{}}`))
	if err != nil {
		return outcome{}
	}
	in.pending.Drop(id)
	return outcome{events: []agent.Event{in.resolved(pr, agent.StatusTimedOut, "", ByAgent)}, lines: [][]byte{line}}
}

// approvable reports whether a policy approval can answer pr (a question or
// a form cannot be filled in by a policy).
func approvable(pr *pendingRequest) bool {
	switch pr.kind {
	case agent.KindCommandApproval, agent.KindFileChangeApproval, agent.KindPermission:
		return pr.refusal == ""
	case agent.KindElicitation:
		return pr.mcpApproval
	}
	return false
}

func approvalOptions(session bool) []agent.Option {
	opts := []agent.Option{{ID: "approve", Label: "Approve", Kind: agent.DecisionApprove}}
	if session {
		opts = append(opts, agent.Option{ID: "approve_session", Label: "Approve for this session", Kind: agent.DecisionApproveSession})
	}
	return append(opts,
		agent.Option{ID: "decline", Label: "Decline", Kind: agent.DecisionDecline},
		agent.Option{ID: "cancel", Label: "Decline and stop", Kind: agent.DecisionCancel})
}

func answerOptions() []agent.Option {
	return []agent.Option{
		{ID: "answer", Label: "Answer", Kind: agent.DecisionAnswer},
		{ID: "decline", Label: "Decline", Kind: agent.DecisionDecline},
		{ID: "cancel", Label: "Decline and stop", Kind: agent.DecisionCancel},
	}
}

func genericOptions() []agent.Option {
	return []agent.Option{
		{ID: "answer", Label: "Send JSON answer", Kind: agent.DecisionAnswer},
		{ID: "decline", Label: "Reply with an error", Kind: agent.DecisionDecline},
	}
}

// describe fills the interaction from the method's params.
func (in *interactions) describe(pr *pendingRequest, it *agent.Interaction, params json.RawMessage, p *Parser) error {
	switch pr.method {
	case "item/commandExecution/requestApproval":
		var v commandApprovalParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindCommandApproval
		it.Command = commandText(v.Command)
		it.Cwd = v.Cwd
		it.Reason = deref(v.Reason)
		if len(v.NetworkApprovalContext) > 0 && string(v.NetworkApprovalContext) != "null" {
			it.Reason = strings.TrimSpace(it.Reason + " (network: " + compactText(v.NetworkApprovalContext) + ")")
		}
		it.Title = fmt.Sprintf("%s wants to run: %s", in.label, agent.Truncate(displayCommand(it.Command, v.CommandActions), 200))
		it.Options = approvalOptions(true)
	case "item/fileChange/requestApproval":
		var v fileChangeApprovalParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindFileChangeApproval
		it.Diff = p.fileDiff(v.ItemID)
		it.Reason = deref(v.Reason)
		if v.GrantRoot != nil && *v.GrantRoot != "" {
			it.Reason = strings.TrimSpace(it.Reason + " (write access to " + *v.GrantRoot + ")")
		}
		it.Title = fmt.Sprintf("%s wants to change files", in.label)
		it.Options = approvalOptions(true)
	case "item/tool/requestUserInput":
		var v userInputParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindQuestion
		for _, q := range v.Questions {
			qq := agent.Question{ID: q.ID, Header: q.Header, Text: q.Question, Secret: q.IsSecret, AllowOther: q.IsOther}
			for _, o := range q.Options {
				qq.Options = append(qq.Options, o.Label)
			}
			it.Questions = append(it.Questions, qq)
		}
		pr.questions = it.Questions
		if v.AutoResolutionMs != nil && *v.AutoResolutionMs > 0 {
			pr.autoResolve = time.Duration(min(*v.AutoResolutionMs, uint64(maxAutoResolve/time.Millisecond))) * time.Millisecond
		}
		it.Title = fmt.Sprintf("%s has a question", in.label)
		it.Options = answerOptions()
	case "mcpServer/elicitation/request":
		var v elicitationParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindElicitation
		it.Reason = v.Message
		if v.Meta != nil && v.Meta.ApprovalKind == "mcp_tool_call" {
			pr.mcpApproval = true
			session := false
			for _, s := range v.Meta.Persist {
				session = session || s == "session"
			}
			it.Title = fmt.Sprintf("Allow the %s MCP server to run %s?", v.ServerName, v.Meta.ToolName)
			it.Command = strings.TrimSpace(v.ServerName + "." + v.Meta.ToolName + " " + compactText(v.Meta.ToolParams))
			it.Options = approvalOptions(session)
			return nil
		}
		it.Title = fmt.Sprintf("The %s MCP server asks: %s", v.ServerName, agent.Truncate(v.Message, 200))
		if v.Mode == "url" || v.URL != "" {
			// Nothing to fill in: the user opens the URL, then accepts.
			pr.url = true
			it.Reason = strings.TrimSpace(v.Message + " " + v.URL)
			it.Options = []agent.Option{
				{ID: "approve", Label: "Done, continue", Kind: agent.DecisionApprove},
				{ID: "decline", Label: "Decline", Kind: agent.DecisionDecline},
				{ID: "cancel", Label: "Decline and stop", Kind: agent.DecisionCancel},
			}
			return nil
		}
		pr.form = formFields(v.RequestedSchema)
		if len(pr.form) == 0 {
			// A form without fields is a confirmation.
			it.Options = approvalOptions(false)
			return nil
		}
		pr.kind = agent.KindQuestion // a form: one question per field
		for _, f := range pr.form {
			it.Questions = append(it.Questions, f.question())
		}
		it.Options = answerOptions()
	case "item/permissions/requestApproval":
		var v permissionsParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindPermission
		pr.permissions = agent.CompactJSON(v.Permissions)
		it.Cwd = v.Cwd
		it.Reason = deref(v.Reason)
		it.Command = compactText(v.Permissions)
		it.Title = fmt.Sprintf("%s asks for more permissions", in.label)
		it.Options = approvalOptions(true)
	case "item/tool/call":
		var v toolCallParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindToolCall
		name := v.Tool
		if v.Namespace != nil && *v.Namespace != "" {
			name = *v.Namespace + "/" + v.Tool
		}
		it.Command = strings.TrimSpace(name + " " + compactText(v.Arguments))
		it.Title = fmt.Sprintf("%s calls the tool %s", in.label, name)
		it.Options = answerOptions()
	case "execCommandApproval": // the legacy API's command approval
		var v execCommandApprovalParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindCommandApproval
		it.Command, it.Cwd, it.Reason = strings.Join(v.Command, " "), v.Cwd, deref(v.Reason)
		display := it.Command
		if len(v.ParsedCmd) > 0 {
			parts := make([]string, 0, len(v.ParsedCmd))
			for _, c := range v.ParsedCmd {
				if c.Cmd != "" {
					parts = append(parts, c.Cmd)
				}
			}
			if len(parts) > 0 {
				display = strings.Join(parts, " && ")
			}
		}
		it.Title = fmt.Sprintf("%s wants to run: %s", in.label, agent.Truncate(display, 200))
		it.Options = approvalOptions(true)
	case "applyPatchApproval": // the legacy API's file-change approval
		var v applyPatchApprovalParams
		if err := decode(pr.method, params, &v); err != nil {
			return err
		}
		pr.kind = agent.KindFileChangeApproval
		it.Diff = legacyDiff(v.FileChanges)
		it.Reason = deref(v.Reason)
		if v.GrantRoot != nil && *v.GrantRoot != "" {
			it.Reason = strings.TrimSpace(it.Reason + " (write access to " + *v.GrantRoot + ")")
		}
		it.Title = fmt.Sprintf("%s wants to change files", in.label)
		it.Options = approvalOptions(true)
	case "account/chatgptAuthTokens/refresh":
		pr.kind = agent.KindUnknown
		pr.refusal = "Threadline does not hold ChatGPT tokens for " + in.label
		it.Title = fmt.Sprintf("%s's ChatGPT sign-in needs new tokens", in.label)
		it.Reason = fmt.Sprintf("%s got 401 Unauthorized and asked for fresh ChatGPT tokens; Threadline does not manage them, so the request was declined. Sign in again on the agent's host (`codex login`).", in.label)
	case "attestation/generate":
		pr.kind = agent.KindUnknown
		pr.refusal = "Threadline cannot attest this client"
		it.Title = fmt.Sprintf("%s asked for a client attestation", in.label)
		it.Reason = "Threadline has no attestation token to give, so the request was declined."
	default:
		pr.kind = agent.KindUnknown
		it.Title = fmt.Sprintf("%s sent an unsupported request: %s", in.label, pr.method)
		it.Options = genericOptions()
	}
	return nil
}

// checkChoice refuses an answer to question id that is none of its options
// when the question takes no answer of the user's own (isOther false).
func checkChoice(qs []agent.Question, id, answer string) error {
	for _, q := range qs {
		if q.ID != id || q.AllowOther || len(q.Options) == 0 || slices.Contains(q.Options, answer) {
			continue
		}
		return fmt.Errorf("%w: %q is not one of %s", ErrBadAnswer, answer, strings.Join(q.Options, ", "))
	}
	return nil
}

// maxAutoResolve caps an agent's own deadline (autoResolutionMs).
const maxAutoResolve = 24 * time.Hour

// legacyDiff renders applyPatchApproval's fileChanges (path → change) as a
// bounded unified-diff-like text, in path order.
func legacyDiff(changes map[string]legacyFileChange) string {
	paths := make([]string, 0, len(changes))
	for p := range changes {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	fc := make([]fileChange, 0, len(paths))
	for _, p := range paths {
		c := changes[p]
		f := fileChange{Path: p, Diff: c.UnifiedDiff}
		f.Kind.Type, f.Kind.MovePath = c.Type, c.MovePath
		if c.Type == "add" || c.Type == "delete" {
			f.Diff = prefixLines(map[string]string{"add": "+", "delete": "-"}[c.Type], c.Content)
		}
		fc = append(fc, f)
	}
	return changesDiff(fc)
}

// prefixLines puts prefix before every line of s.
func prefixLines(prefix, s string) string {
	if s == "" {
		return ""
	}
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// commandText accepts the command as a string or (legacy) an argv array.
func commandText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return strings.Join(argv, " ")
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// respond answers pending request resp.InteractionID with the native result
// of its method and returns the interaction.resolved event and the line to
// write.
func (in *interactions) respond(resp agent.InteractionResponse) (outcome, error) {
	pr, ok := in.pending.Get(resp.InteractionID)
	if !ok {
		return outcome{}, fmt.Errorf("%w: %q", agent.ErrUnknownInteraction, resp.InteractionID)
	}
	result, status, interrupt, err := nativeAnswer(pr, resp)
	if err != nil {
		return outcome{}, err
	}
	var line []byte
	if result.err != nil {
		line = jsonrpc.EncodeError(pr.nativeID, result.err.Code, result.err.Message)
	} else if line, err = jsonrpc.EncodeResult(pr.nativeID, result.value); err != nil {
		return outcome{}, fmt.Errorf("%w: %w", ErrBadAnswer, err)
	}
	in.pending.Drop(pr.id)
	return outcome{
		events:    []agent.Event{in.resolved(pr, status, resp.Decision, resp.By)},
		lines:     [][]byte{line},
		interrupt: interrupt,
	}, nil
}

type answer struct {
	value json.RawMessage
	err   *jsonrpc.Error
}

func result(v any) answer {
	b, _ := json.Marshal(v)
	return answer{value: b}
}

// nativeAnswer builds the method's exact response shape. Anything not an
// approval never approves: unknown decisions decline.
func nativeAnswer(pr *pendingRequest, resp agent.InteractionResponse) (answer, string, bool, error) {
	d := resp.Decision
	switch pr.method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		switch d {
		case agent.DecisionApprove:
			return result(map[string]string{"decision": "accept"}), agent.StatusApproved, false, nil
		case agent.DecisionApproveSession:
			return result(map[string]string{"decision": "acceptForSession"}), agent.StatusApprovedForSession, false, nil
		case agent.DecisionCancel:
			return result(map[string]string{"decision": "cancel"}), agent.StatusCancelled, false, nil
		}
		return result(map[string]string{"decision": "decline"}), agent.StatusDeclined, false, nil

	case "item/tool/requestUserInput":
		switch d {
		case agent.DecisionAnswer, agent.DecisionApprove, agent.DecisionApproveSession:
			answers := map[string]map[string][]string{}
			for k, v := range resp.Answers {
				if err := checkChoice(pr.questions, k, v); err != nil {
					return answer{}, "", false, err
				}
				answers[k] = map[string][]string{"answers": {v}}
			}
			return result(map[string]any{"answers": answers}), agent.StatusAnswered, false, nil
		case agent.DecisionCancel:
			return result(map[string]any{"answers": map[string]any{}}), agent.StatusCancelled, true, nil
		}
		return result(map[string]any{"answers": map[string]any{}}), agent.StatusDeclined, false, nil

	case "mcpServer/elicitation/request":
		type elicit struct {
			Action  string          `json:"action"`
			Content json.RawMessage `json:"content"`
			Meta    json.RawMessage `json:"_meta"`
		}
		null := json.RawMessage("null")
		switch d {
		case agent.DecisionApprove, agent.DecisionAnswer, agent.DecisionApproveSession:
			if pr.mcpApproval {
				if d == agent.DecisionApproveSession {
					return result(elicit{"accept", json.RawMessage("{}"), json.RawMessage(`{"persist":"session"}`)}), agent.StatusApprovedForSession, false, nil
				}
				return result(elicit{"accept", json.RawMessage("{}"), null}), agent.StatusApproved, false, nil
			}
			if pr.url {
				return result(elicit{"accept", null, null}), agent.StatusApproved, false, nil
			}
			if len(pr.form) == 0 {
				return result(elicit{"accept", json.RawMessage("{}"), null}), agent.StatusApproved, false, nil
			}
			content, err := formContent(pr.form, resp.Answers)
			if err != nil {
				return answer{}, "", false, err
			}
			return result(elicit{"accept", content, null}), agent.StatusAnswered, false, nil
		case agent.DecisionCancel:
			return result(elicit{"cancel", null, null}), agent.StatusCancelled, false, nil
		}
		return result(elicit{"decline", null, null}), agent.StatusDeclined, false, nil

	case "item/permissions/requestApproval":
		type grant struct {
			Permissions json.RawMessage `json:"permissions"`
			Scope       string          `json:"scope"`
		}
		asked := pr.permissions
		if len(asked) == 0 || string(asked) == "null" {
			asked = json.RawMessage("{}")
		}
		switch d {
		case agent.DecisionApprove:
			return result(grant{asked, "turn"}), agent.StatusApproved, false, nil
		case agent.DecisionApproveSession:
			return result(grant{asked, "session"}), agent.StatusApprovedForSession, false, nil
		case agent.DecisionCancel:
			return result(grant{json.RawMessage("{}"), "turn"}), agent.StatusCancelled, true, nil
		}
		return result(grant{json.RawMessage("{}"), "turn"}), agent.StatusDeclined, false, nil

	case "item/tool/call":
		type item struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		type toolResult struct {
			ContentItems []item `json:"contentItems"`
			Success      bool   `json:"success"`
		}
		switch d {
		case agent.DecisionAnswer, agent.DecisionApprove, agent.DecisionApproveSession:
			if raw, ok := resp.Answers[AnswerJSON]; ok {
				if !json.Valid([]byte(raw)) {
					return answer{}, "", false, fmt.Errorf("%w: %s answer is not valid JSON", ErrBadAnswer, pr.method)
				}
				return answer{value: json.RawMessage(raw)}, agent.StatusAnswered, false, nil
			}
			return result(toolResult{[]item{{"inputText", resp.Answers[AnswerOutput]}}, true}), agent.StatusAnswered, false, nil
		case agent.DecisionCancel:
			return result(toolResult{[]item{{"inputText", "cancelled by the user"}}, false}), agent.StatusCancelled, true, nil
		}
		return result(toolResult{[]item{{"inputText", "declined by the user"}}, false}), agent.StatusDeclined, false, nil

	case "execCommandApproval", "applyPatchApproval":
		// The legacy API's ReviewDecision.
		switch d {
		case agent.DecisionApprove:
			return result(map[string]string{"decision": "approved"}), agent.StatusApproved, false, nil
		case agent.DecisionApproveSession:
			return result(map[string]string{"decision": "approved_for_session"}), agent.StatusApprovedForSession, false, nil
		case agent.DecisionCancel:
			return result(map[string]string{"decision": "abort"}), agent.StatusCancelled, false, nil
		}
		rejection := "declined by the user"
		if resp.By == ByPolicy {
			rejection = "declined by Threadline's approval policy: nobody can be asked in this run"
		}
		return result(map[string]any{"decision": map[string]any{"denied": map[string]string{"rejection": rejection}}}), agent.StatusDeclined, false, nil

	case "account/chatgptAuthTokens/refresh", "attestation/generate":
		return answer{err: &jsonrpc.Error{Code: codeDeclined, Message: pr.refusal}}, agent.StatusDeclined, false, nil
	}

	// Unknown method: a raw JSON result, or an error reply.
	switch d {
	case agent.DecisionAnswer, agent.DecisionApprove, agent.DecisionApproveSession:
		raw, ok := resp.Answers[AnswerJSON]
		if !ok || !json.Valid([]byte(raw)) {
			return answer{}, "", false, fmt.Errorf("%w: %s needs a valid JSON answer under %q", ErrBadAnswer, pr.method, AnswerJSON)
		}
		return answer{value: json.RawMessage(raw)}, agent.StatusAnswered, false, nil
	case agent.DecisionCancel:
		return answer{err: &jsonrpc.Error{Code: codeDeclined, Message: "cancelled by the user"}}, agent.StatusCancelled, true, nil
	}
	if resp.By == ByPolicy {
		return answer{err: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "unsupported request: " + pr.method}}, agent.StatusDeclined, false, nil
	}
	return answer{err: &jsonrpc.Error{Code: codeDeclined, Message: "declined by the user"}}, agent.StatusDeclined, false, nil
}

// method is the method of pending request id ("" if it is not pending).
func (in *interactions) method(id string) string {
	if pr, ok := in.pending.Get(id); ok {
		return pr.method
	}
	return ""
}

// resolvedByServer closes a request the server resolved without our answer.
func (in *interactions) resolvedByServer(requestID json.RawMessage) []agent.Event {
	key := string(agent.CompactJSON(requestID))
	for id, pr := range in.pending.All() {
		if string(pr.nativeID) == key {
			in.pending.Drop(id)
			return []agent.Event{in.resolved(pr, agent.StatusCancelled, "", ByAgent)}
		}
	}
	return nil
}

// endAll resolves every open request as turn_ended.
func (in *interactions) endAll() []agent.Event {
	return procrun.CloseAll(&in.pending, func(_ string, pr *pendingRequest) agent.Event {
		return in.resolved(pr, agent.StatusTurnEnded, "", "")
	})
}

func (in *interactions) resolved(pr *pendingRequest, status string, d agent.Decision, by string) agent.Event {
	return agent.Event{
		Type:       agent.EventInteractionResolved,
		Resolution: &agent.Resolution{InteractionID: pr.id, Status: status, Decision: d, By: by},
		Native:     &agent.Native{Provider: in.provider, Kind: pr.method, ID: pr.nativeID},
	}
}
