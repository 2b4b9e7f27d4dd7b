// One pass per line: a notification line decoded into a notifLine by
// jsonscan (issue 19).

package codexharness

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/providers/internal/jsonscan"
)

// notifDec is what fastNotif decodes from a line: a notifLine, with the
// params held in d alone while they have only deltaParams's keys (the
// deltas, most of the stream), so that such a line does not allocate the
// whole union; u is set, with d's fields moved in, at the first other key
// of the union.
//
// While the params are in d, its plain strings are kept as spans of the
// line (span, in deltaStr order) and made one string, sliced, when the
// line is read (strs): one allocation for the ids and the text instead
// of four. The strings share their memory: an item id kept by the Parser
// keeps the line's other strings (a few hundred bytes) with it.
type notifDec struct {
	id     json.RawMessage
	method string
	params bool // an object was decoded and not reset by a later null
	d      deltaParams
	span   [4][]byte // threadId, turnId, itemId, delta bodies not yet in d
	u      *notifParams
}

// deltaStr is d's string field i, in span order.
func (n *notifDec) deltaStr(i int) *string {
	switch i {
	case 0:
		return &n.d.ThreadID
	case 1:
		return &n.d.TurnID
	case 2:
		return &n.d.ItemID
	}
	return &n.d.Delta
}

// str scans d's string field i: a plain body is kept in span (set by
// strs), an escaped one is decoded at once, null leaves what was there.
func (n *notifDec) str(s *jsonscan.Scanner, i int) error {
	body, plain, err := s.StrRaw()
	switch {
	case err != nil || body == nil:
		return err
	case plain:
		n.span[i] = body
	default:
		n.span[i] = nil
		*n.deltaStr(i) = jsonscan.Unquote(body)
	}
	return nil
}

// strs sets d's string fields from span, all from one string.
func (n *notifDec) strs() {
	var total int
	for _, b := range n.span {
		total += len(b)
	}
	var all string
	if total > 0 {
		var sb strings.Builder
		sb.Grow(total)
		for _, b := range n.span {
			sb.Write(b)
		}
		all = sb.String()
	}
	off := 0
	for i, b := range n.span {
		if b != nil {
			*n.deltaStr(i) = all[off : off+len(b)]
			off += len(b)
		}
	}
	n.span = [4][]byte{}
}

// union is the params as the union: u, or d's fields in a new one.
func (n *notifDec) union() *notifParams {
	if n.u == nil {
		n.strs()
		n.u = liftDelta(&n.d)
	}
	return n.u
}

// liftDelta is the union whose only fields set are d's.
func liftDelta(d *deltaParams) *notifParams {
	return &notifParams{ThreadID: d.ThreadID, TurnID: d.TurnID, ItemID: d.ItemID, Delta: d.Delta,
		SummaryIndex: d.SummaryIndex, Message: d.Message}
}

// fastNotif decodes line into n (which must be zero) as json.Unmarshal(line,
// &notifLine) does, in one pass over the line (jsonscan): the envelope, the
// union's strings, numbers and the item, turn and thread objects decoded as
// it walks, the rare typed fields (an error, a plan, token usage, a tool
// item's actions, changes and results) through encoding/json on their own
// bytes. It returns jsonscan.ErrSlow for anything it does not handle
// exactly as encoding/json would (invalid JSON, a value of another type, a
// key encoding/json would unescape or fold onto a field, a top-level
// null); n is then partly set and the caller decodes the line again with
// json.Unmarshal. Raw fields are copies: nothing aliases the line.
func fastNotif(line []byte, n *notifDec) error {
	s := jsonscan.New(line)
	if s.TopNull() {
		return jsonscan.ErrSlow
	}
	err := s.Object(notifLineKeys, func(key []byte) error {
		switch string(key) {
		case "id":
			return rawCopy(&s, &n.id)
		case "method":
			return s.StrIn(&n.method, names)
		case "params":
			if s.PeekNull() {
				n.params, n.d, n.span, n.u = false, deltaParams{}, [4][]byte{}, nil
				return s.Skip()
			}
			if !s.PeekObject() {
				return jsonscan.ErrSlow
			}
			n.params = true
			return decodeParams(&s, n)
		}
		return jsonscan.ErrUnknownKey
	})
	if err != nil {
		return err
	}
	if n.u == nil {
		n.strs()
	}
	return s.End()
}

var (
	notifLineKeys = []string{"id", "method", "params"}
	paramsKeys    = []string{"threadId", "turnId", "itemId", "delta", "summaryIndex", "message", "item", "turn",
		"thread", "tokenUsage", "error", "willRetry", "summary", "details", "explanation", "plan", "fromModel",
		"toModel", "reason", "requestId"}
	itemKeys = []string{"type", "id", "text", "summary", "content", "command", "cwd", "commandActions",
		"aggregatedOutput", "exitCode", "status", "changes", "server", "tool", "namespace", "arguments", "result",
		"error", "contentItems", "success", "query", "senderThreadId", "receiverThreadIds", "prompt", "model",
		"agentsStates"}
	turnKeys   = []string{"id", "status", "error", "items", "durationMs"}
	threadKeys = []string{"id", "model"}
	// names are the method, item type and status values of most lines.
	names = jsonscan.NewNames("item/agentMessage/delta", "item/plan/delta", "item/reasoning/summaryTextDelta",
		"item/reasoning/textDelta", "item/reasoning/summaryPartAdded", "item/commandExecution/outputDelta",
		"item/fileChange/outputDelta", "item/mcpToolCall/progress", "item/started", "item/completed",
		"thread/tokenUsage/updated", "error", "warning", "configWarning", "thread/started", "turn/started",
		"turn/completed", "turn/plan/updated", "turn/diff/updated", "model/rerouted", "serverRequest/resolved",
		"thread/status/changed", "thread/settings/updated", "account/rateLimits/updated",
		"remoteControl/status/changed", "agentMessage", "userMessage", "reasoning", "plan", "commandExecution",
		"fileChange", "mcpToolCall", "dynamicToolCall", "webSearch", "collabAgentToolCall", "inProgress",
		"completed", "failed", "declined", "interrupted")
)

// object decodes a struct-valued field in place, as encoding/json does: null
// leaves it as it is, an object sets the fields it has (a repeated key
// merges into what the first one set), anything else is a type error.
func object(s *jsonscan.Scanner, known []string, field func(key []byte) error) error {
	if s.PeekNull() {
		return s.Skip()
	}
	if !s.PeekObject() {
		return jsonscan.ErrSlow
	}
	return s.Object(known, field)
}

// decodeParams decodes a params object into n.d while its keys are
// deltaParams's, into the union (n.union) from the first other key on.
func decodeParams(s *jsonscan.Scanner, n *notifDec) error {
	return s.Object(paramsKeys, func(key []byte) error {
		d := &n.d
		if n.u != nil {
			d = nil
		}
		switch string(key) {
		case "threadId":
			if d != nil {
				return n.str(s, 0)
			}
			return s.Str(&n.u.ThreadID)
		case "turnId":
			if d != nil {
				return n.str(s, 1)
			}
			return s.Str(&n.u.TurnID)
		case "itemId":
			if d != nil {
				return n.str(s, 2)
			}
			return s.Str(&n.u.ItemID)
		case "delta":
			if d != nil {
				return n.str(s, 3)
			}
			return s.Str(&n.u.Delta)
		case "summaryIndex":
			if d != nil {
				return intField(s, &d.SummaryIndex)
			}
			return intField(s, &n.u.SummaryIndex)
		case "message":
			if d != nil {
				return s.Str(&d.Message)
			}
			return s.Str(&n.u.Message)
		}
		return unionField(s, n, key)
	})
}

// unionField decodes the other keys of the union (n.union); other keys
// are unknown.
func unionField(s *jsonscan.Scanner, n *notifDec, key []byte) error {
	switch string(key) {
	case "item", "turn", "thread", "tokenUsage", "error", "willRetry", "summary", "details", "explanation", "plan",
		"fromModel", "toModel", "reason", "requestId":
	default:
		return jsonscan.ErrUnknownKey
	}
	u := n.union()
	switch string(key) {
	case "item":
		return object(s, itemKeys, func(key []byte) error { return decodeItem(s, &u.Item, key) })
	case "turn":
		return object(s, turnKeys, func(key []byte) error { return decodeTurn(s, &u.Turn, key) })
	case "thread":
		return object(s, threadKeys, func(key []byte) error {
			switch string(key) {
			case "id":
				return s.Str(&u.Thread.ID)
			case "model":
				return s.StrIn(&u.Thread.Model, names)
			}
			return jsonscan.ErrUnknownKey
		})
	case "tokenUsage":
		return jsonscan.Std(s, &u.TokenUsage)
	case "error":
		return jsonscan.Std(s, &u.Error)
	case "willRetry":
		return s.Bool(&u.WillRetry)
	case "summary":
		return s.Str(&u.Summary)
	case "details":
		return s.StrPtr(&u.Details)
	case "explanation":
		return s.StrPtr(&u.Explanation)
	case "plan":
		return jsonscan.Std(s, &u.Plan)
	case "fromModel":
		return s.Str(&u.FromModel)
	case "toModel":
		return s.Str(&u.ToModel)
	case "reason":
		return s.Str(&u.Reason)
	case "requestId":
		return rawCopy(s, &u.RequestID)
	}
	return jsonscan.ErrUnknownKey
}

func decodeItem(s *jsonscan.Scanner, it *wireItem, key []byte) error {
	switch string(key) {
	case "type":
		return s.StrIn(&it.Type, names)
	case "id":
		return s.Str(&it.ID)
	case "text":
		return s.Str(&it.Text)
	case "summary":
		return jsonscan.Std(s, &it.Summary)
	case "content":
		return rawCopy(s, &it.Content)
	case "command":
		return s.Str(&it.Command)
	case "cwd":
		return s.Str(&it.Cwd)
	case "commandActions":
		return jsonscan.Std(s, &it.CommandActions)
	case "aggregatedOutput":
		return s.StrPtr(&it.AggregatedOutput)
	case "exitCode":
		return jsonscan.Std(s, &it.ExitCode)
	case "status":
		return s.StrIn(&it.Status, names)
	case "changes":
		return jsonscan.Std(s, &it.Changes)
	case "server":
		return s.Str(&it.Server)
	case "tool":
		return s.Str(&it.Tool)
	case "namespace":
		return s.StrPtr(&it.Namespace)
	case "arguments":
		return rawCopy(s, &it.Arguments)
	case "result":
		return jsonscan.Std(s, &it.Result)
	case "error":
		return jsonscan.Std(s, &it.Error)
	case "contentItems":
		return jsonscan.Std(s, &it.ContentItems)
	case "success":
		return jsonscan.Std(s, &it.Success)
	case "query":
		return s.Str(&it.Query)
	case "senderThreadId":
		return s.Str(&it.SenderThreadID)
	case "receiverThreadIds":
		return jsonscan.Std(s, &it.ReceiverThreadIDs)
	case "prompt":
		return s.StrPtr(&it.Prompt)
	case "model":
		return s.StrPtr(&it.Model)
	case "agentsStates":
		return jsonscan.Std(s, &it.AgentsStates)
	}
	return jsonscan.ErrUnknownKey
}

func decodeTurn(s *jsonscan.Scanner, t *wireTurn, key []byte) error {
	switch string(key) {
	case "id":
		return s.Str(&t.ID)
	case "status":
		return s.StrIn(&t.Status, names)
	case "error":
		return jsonscan.Std(s, &t.Error)
	case "items":
		return rawItems(s, &t.Items)
	case "durationMs":
		return jsonscan.Std(s, &t.DurationMs)
	}
	return jsonscan.ErrUnknownKey
}

// rawCopy is jsonscan's Raw, copied out of the line.
func rawCopy(s *jsonscan.Scanner, dst *json.RawMessage) error {
	var raw json.RawMessage
	if err := s.Raw(&raw); err != nil {
		return err
	}
	*dst = bytes.Clone(raw)
	return nil
}

// rawItems decodes a []json.RawMessage as encoding/json does: null sets it
// to nil, an array to its elements (copies), reusing what a repeated key
// left (an empty array is an empty slice, not nil).
func rawItems(s *jsonscan.Scanner, dst *[]json.RawMessage) error {
	if s.PeekNull() {
		*dst = nil
		return s.Skip()
	}
	items := (*dst)[:0]
	if items == nil {
		items = []json.RawMessage{}
	}
	err := s.Array(func() error {
		var raw json.RawMessage
		if err := rawCopy(s, &raw); err != nil {
			return err
		}
		items = append(items, raw)
		return nil
	})
	*dst = items
	return err
}

// intField decodes a JSON number into an int as encoding/json does: null
// leaves it as it is; only an integer that fits (no fraction or exponent)
// is taken, anything else is a type error (the slow path).
func intField(s *jsonscan.Scanner, dst *int) error {
	var raw json.RawMessage
	if s.PeekNull() {
		return s.Skip()
	}
	if err := s.Raw(&raw); err != nil {
		return err
	}
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return jsonscan.ErrSlow
	}
	n, err := strconv.ParseInt(string(raw), 10, strconv.IntSize)
	if err != nil {
		return jsonscan.ErrSlow
	}
	*dst = int(n)
	return nil
}
