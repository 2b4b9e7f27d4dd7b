// One decode per line: a notification and its params in one pass
// (fastNotif) or one json.Unmarshal.

package codexharness

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/providers/jsonrpc"
)

// notifParams is the union of the params of every notification the Parser
// reads, so that a notification line decodes once, with its params, before
// its method is looked at. Each field has the key and type it has in the
// method's own params type (deltaParams, itemParams, ...); into copies the
// fields a method reads, so the Parser sees what decoding the params as
// that type gives. A line whose params do not decode as the union (a key
// with another type in a method the Parser does not read) takes the
// two-step path (decodeLine).
type notifParams struct {
	ThreadID     string          `json:"threadId"`
	TurnID       string          `json:"turnId"`
	ItemID       string          `json:"itemId"`
	Delta        string          `json:"delta"`
	SummaryIndex int             `json:"summaryIndex"`
	Message      string          `json:"message"`
	Item         wireItem        `json:"item"`
	Turn         wireTurn        `json:"turn"`
	Thread       threadRef       `json:"thread"`
	TokenUsage   tokenUsage      `json:"tokenUsage"`
	Error        turnError       `json:"error"`
	WillRetry    bool            `json:"willRetry"`
	Summary      string          `json:"summary"`
	Details      *string         `json:"details"`
	Explanation  *string         `json:"explanation"`
	Plan         []planStep      `json:"plan"`
	FromModel    string          `json:"fromModel"`
	ToModel      string          `json:"toModel"`
	Reason       string          `json:"reason"`
	RequestID    json.RawMessage `json:"requestId"`
}

// into sets v, a pointer to a method's params type, from the union.
func (u *notifParams) into(v any) error {
	switch v := v.(type) {
	case *deltaParams:
		*v = deltaParams{ThreadID: u.ThreadID, TurnID: u.TurnID, ItemID: u.ItemID, Delta: u.Delta, SummaryIndex: u.SummaryIndex, Message: u.Message}
	case *itemParams:
		*v = itemParams{ThreadID: u.ThreadID, TurnID: u.TurnID, Item: u.Item}
	case *turnParams:
		*v = turnParams{ThreadID: u.ThreadID, Turn: u.Turn}
	case *threadStartedParams:
		*v = threadStartedParams{Thread: u.Thread}
	case *tokenUsageParams:
		*v = tokenUsageParams{ThreadID: u.ThreadID, TurnID: u.TurnID, TokenUsage: u.TokenUsage}
	case *errorParams:
		*v = errorParams{ThreadID: u.ThreadID, TurnID: u.TurnID, Error: u.Error, WillRetry: u.WillRetry}
	case *warningParams:
		*v = warningParams{ThreadID: u.ThreadID, Message: u.Message, Summary: u.Summary, Details: u.Details}
	case *planParams:
		*v = planParams{ThreadID: u.ThreadID, TurnID: u.TurnID, Explanation: u.Explanation, Plan: u.Plan}
	case *modelReroutedParams:
		*v = modelReroutedParams{FromModel: u.FromModel, ToModel: u.ToModel, Reason: u.Reason}
	case *resolvedParams:
		*v = resolvedParams{ThreadID: u.ThreadID, RequestID: u.RequestID}
	default:
		return fmt.Errorf("codexharness: no union field set for %T", v)
	}
	return nil
}

// params are a notification's params: decoded with the line (u, or d when
// the params have only deltaParams's keys: the union with only those
// fields set), or raw bytes decoded as the method's type when it is read.
type params struct {
	u     *notifParams
	d     deltaParams // held by value: a delta line allocates no params
	light bool        // d holds the params
	raw   json.RawMessage
}

// decode sets v, a pointer to method's params type.
func (ps params) decode(method string, v any) error {
	switch {
	case ps.light:
		if v, ok := v.(*deltaParams); ok {
			*v = ps.d
			return nil
		}
		return liftDelta(&ps.d).into(v)
	case ps.u != nil:
		return ps.u.into(v)
	}
	return decode(method, ps.raw, v)
}

// notifLine is the shape of a notification line: no id, a method, params.
type notifLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params *notifParams    `json:"params"`
}

// decodeLine decodes one stdout line. A notification with object params
// (the stream's lines) is decoded once, params and all: the message has
// no Params and ps.u is set. The line is walked once by fastNotif, and
// decoded by json.Unmarshal when that gives up (stdDecodeLine has only the
// latter: the differential tests and BenchmarkParseReferenceStd). Anything
// else (requests, responses, a line the union does not fit, params missing
// or null) is classified by jsonrpc.Decode, ps.raw holding the params,
// with the same result as that two-step path would give for a
// notification.
func decodeLine(line []byte) (jsonrpc.Message, params, error) { return decodeLineWith(line, false) }

func decodeLineWith(line []byte, stdOnly bool) (jsonrpc.Message, params, error) {
	// The app-server writes a response's or request's id first: such a
	// line goes to jsonrpc.Decode at once (either way gives the same).
	if !bytes.HasPrefix(line, []byte(`{"id"`)) {
		if !stdOnly {
			var n notifDec
			if fastNotif(line, &n) == nil {
				if len(n.id) != 0 || n.method == "" || !n.params {
					return rpcDecode(line)
				}
				ps := params{u: n.u}
				if n.u == nil {
					ps.d, ps.light = n.d, true
				}
				return jsonrpc.Message{Kind: jsonrpc.KindNotification, Method: n.method}, ps, nil
			}
		}
		var n notifLine
		if json.Unmarshal(line, &n) == nil && len(n.ID) == 0 && n.Method != "" && n.Params != nil {
			return jsonrpc.Message{Kind: jsonrpc.KindNotification, Method: n.Method}, params{u: n.Params}, nil
		}
	}
	return rpcDecode(line)
}

// rpcDecode is a line that is not a notification with object params.
func rpcDecode(line []byte) (jsonrpc.Message, params, error) {
	m, err := jsonrpc.Decode(line)
	return m, params{raw: m.Params}, err
}
