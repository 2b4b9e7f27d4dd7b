// Server-initiated requests: approvals, questions, elicitations and the rest
// become agent.Interactions; answers go back with the original JSON-RPC id.

package codexharness

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/providers/jsonrpc"

	"github.com/threadline-bot/threadline/agentcore/agent"
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

	permissions json.RawMessage   // item/permissions/requestApproval: what was asked
	mcpApproval bool              // an MCP tool-call approval elicitation
	schema      map[string]string // elicitation form: property → JSON type
}

// interactions tracks the server requests of one connection.
type interactions struct {
	provider agent.ProviderID
	label    string
	pending  map[string]*pendingRequest // Threadline id → request
	order    []string
	seen     map[string]bool // native ids seen on this connection
}

func newInteractions(provider agent.ProviderID, label string) *interactions {
	return &interactions{provider: provider, label: label, pending: map[string]*pendingRequest{}, seen: map[string]bool{}}
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
}

// request turns server request m into interaction.requested. With a policy
// decision (no one can be asked) it also answers at once and resolves.
func (in *interactions) request(m *jsonrpc.Message, line []byte, p *Parser, policy agent.Decision) (outcome, error) {
	key := string(m.ID)
	if in.seen[key] {
		return outcome{}, fmt.Errorf("%w: %s (%s)", agent.ErrDuplicateRequest, m.ID, m.Method)
	}
	in.seen[key] = true
	pr := &pendingRequest{id: interactionID(m.ID), nativeID: m.ID, method: m.Method}
	it := &agent.Interaction{ID: pr.id, NativeID: m.ID, Payload: agent.NativePayload(line, MaxNativePayload)}
	if err := in.describe(pr, it, m.Params, p); err != nil {
		// Malformed params of a known method: still ask, as an unknown request.
		pr.kind, it.Kind = agent.KindUnknown, agent.KindUnknown
		it.Title = fmt.Sprintf("%s sent a request it could not describe: %s", in.label, m.Method)
		it.Options = genericOptions()
	}
	it.Kind = pr.kind
	in.pending[pr.id] = pr
	in.order = append(in.order, pr.id)
	out := outcome{events: []agent.Event{{
		Type:        agent.EventInteractionRequested,
		Interaction: it,
		Native:      &agent.Native{Provider: in.provider, Kind: m.Method, ID: m.ID},
	}}}
	if policy == "" {
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

// approvable reports whether a policy approval can answer pr (a question or
// a form cannot be filled in by a policy).
func approvable(pr *pendingRequest) bool {
	switch pr.kind {
	case agent.KindCommandApproval, agent.KindFileChangeApproval, agent.KindPermission:
		return true
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
			qq := agent.Question{ID: q.ID, Header: q.Header, Text: q.Question, Secret: q.IsSecret}
			for _, o := range q.Options {
				qq.Options = append(qq.Options, o.Label)
			}
			it.Questions = append(it.Questions, qq)
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
		pr.schema = schemaTypes(v.RequestedSchema)
		it.Title = fmt.Sprintf("The %s MCP server asks: %s", v.ServerName, agent.Truncate(v.Message, 200))
		if v.URL != "" {
			it.Reason = strings.TrimSpace(v.Message + " " + v.URL)
		}
		it.Questions = append(it.Questions, schemaQuestions(v.RequestedSchema)...)
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
	default:
		pr.kind = agent.KindUnknown
		it.Title = fmt.Sprintf("%s sent an unsupported request: %s", in.label, pr.method)
		it.Options = genericOptions()
	}
	return nil
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

// schemaTypes maps an elicitation form's properties to their JSON types.
func schemaTypes(schema json.RawMessage) map[string]string {
	var v struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &v)
	out := make(map[string]string, len(v.Properties))
	for k, p := range v.Properties {
		out[k] = p.Type
	}
	return out
}

// schemaQuestions turns an elicitation form into questions, in a stable order.
func schemaQuestions(schema json.RawMessage) []agent.Question {
	var v struct {
		Properties map[string]struct {
			Type        string   `json:"type"`
			Title       string   `json:"title"`
			Description string   `json:"description"`
			Enum        []string `json:"enum"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(schema, &v)
	keys := make([]string, 0, len(v.Properties))
	for k := range v.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []agent.Question
	for _, k := range keys {
		p := v.Properties[k]
		text := p.Title
		if text == "" {
			text = k
		}
		if p.Description != "" {
			text += " (" + p.Description + ")"
		}
		q := agent.Question{ID: k, Header: p.Type, Text: text, Options: p.Enum}
		if p.Type == "boolean" && len(q.Options) == 0 {
			q.Options = []string{"true", "false"}
		}
		out = append(out, q)
	}
	return out
}

// respond answers pending request resp.InteractionID with the native result
// of its method and returns the interaction.resolved event and the line to
// write.
func (in *interactions) respond(resp agent.InteractionResponse) (outcome, error) {
	pr, ok := in.pending[resp.InteractionID]
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
	in.drop(pr.id)
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
			content, err := formContent(pr.schema, resp.Answers)
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

// formContent builds an elicitation's content from the answers, typed by the
// form's schema; a raw JSON object under AnswerJSON wins.
func formContent(schema map[string]string, answers map[string]string) (json.RawMessage, error) {
	if raw, ok := answers[AnswerJSON]; ok {
		var obj map[string]json.RawMessage
		if json.Unmarshal([]byte(raw), &obj) != nil {
			return nil, fmt.Errorf("%w: elicitation content must be a JSON object", ErrBadAnswer)
		}
		return json.RawMessage(raw), nil
	}
	content := map[string]any{}
	for k, v := range answers {
		switch schema[k] {
		case "boolean":
			b, err := strconv.ParseBool(strings.TrimSpace(strings.ToLower(v)))
			if err != nil {
				b = strings.EqualFold(v, "yes") || strings.EqualFold(v, "y")
			}
			content[k] = b
		case "integer":
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s is not an integer", ErrBadAnswer, k)
			}
			content[k] = n
		case "number":
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return nil, fmt.Errorf("%w: %s is not a number", ErrBadAnswer, k)
			}
			content[k] = f
		default:
			content[k] = v
		}
	}
	b, _ := json.Marshal(content)
	return b, nil
}

// resolvedByServer closes a request the server resolved without our answer.
func (in *interactions) resolvedByServer(requestID json.RawMessage) []agent.Event {
	key := string(agent.CompactJSON(requestID))
	for _, id := range in.order {
		pr := in.pending[id]
		if pr != nil && string(pr.nativeID) == key {
			in.drop(id)
			return []agent.Event{in.resolved(pr, agent.StatusCancelled, "", ByAgent)}
		}
	}
	return nil
}

// endAll resolves every open request as turn_ended.
func (in *interactions) endAll() []agent.Event {
	var out []agent.Event
	for _, id := range in.order {
		if pr, ok := in.pending[id]; ok {
			out = append(out, in.resolved(pr, agent.StatusTurnEnded, "", ""))
		}
	}
	clear(in.pending)
	in.order = in.order[:0]
	return out
}

func (in *interactions) drop(id string) {
	delete(in.pending, id)
	for i, k := range in.order {
		if k == id {
			in.order = append(in.order[:i], in.order[i+1:]...)
			break
		}
	}
}

func (in *interactions) resolved(pr *pendingRequest, status string, d agent.Decision, by string) agent.Event {
	return agent.Event{
		Type:       agent.EventInteractionResolved,
		Resolution: &agent.Resolution{InteractionID: pr.id, Status: status, Decision: d, By: by},
		Native:     &agent.Native{Provider: in.provider, Kind: pr.method, ID: pr.nativeID},
	}
}
