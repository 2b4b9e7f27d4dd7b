// Helpers shared by the dialect parsers.

package jsonstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// decodeLine decodes line into v, the record of a family (streamRecord,
// ChatMessage): the union of what its dialects print. A field whose value
// has another type than the record's (a field another dialect prints with
// the same name, or a CLI's new form of it) is left zero instead of failing
// the line, so that the rest of it (a result, a message) still counts;
// malformed JSON and a line that is not an object are errors.
func decodeLine(line []byte, v any) error {
	err := json.Unmarshal(line, v)
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
		return nil
	}
	return err
}

// Bounds on what events carry.
const (
	// MaxToolOutput bounds tool.completed output text.
	MaxToolOutput = 4 << 10
	// MaxNativePayload bounds provider.native payloads.
	MaxNativePayload = 8 << 10
)

// native builds a provider.native event with a bounded payload.
func native(id agent.ProviderID, kind string, line []byte) agent.Event {
	return agent.Event{Type: agent.EventProviderNative, Native: &agent.Native{
		Provider: id, Kind: kind, Payload: agent.NativePayload(line, MaxNativePayload),
	}}
}

// nativeRef is the correlation envelope of a typed event.
func nativeRef(id agent.ProviderID, kind, nativeID string) *agent.Native {
	n := &agent.Native{Provider: id, Kind: kind}
	if nativeID != "" {
		n.ID = jsonString(nativeID)
	}
	return n
}

// ToolInput returns a tool input as JSON: an object is kept, a string holding
// a JSON object or array (OpenAI's function-call arguments) is decoded, any
// other string is quoted, null is dropped. kimi uses it too.
func ToolInput(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if c := agent.CompactJSON([]byte(s)); c != nil && (s[0] == '{' || s[0] == '[') {
				return c
			}
			return jsonString(s)
		}
	}
	return agent.CompactJSON(raw)
}

func jsonString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// rawText renders a JSON value as text: strings unquoted, the rest compact.
func rawText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if c := agent.CompactJSON(raw); c != nil {
		return string(c)
	}
	return string(raw)
}

// ContentText renders a tool result's content as text: a string as it is,
// an array of parts as their non-empty texts, one a line, any other value as
// compact JSON. kimi uses it too.
func ContentText(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var parts []struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &parts) == nil {
			texts := make([]string, 0, len(parts))
			for _, pt := range parts {
				if pt.Text != "" {
					texts = append(texts, pt.Text)
				}
			}
			return strings.Join(texts, "\n")
		}
	}
	return rawText(raw)
}

// errorText renders an error value: its message field when it has one, else
// rawText.
func errorText(raw json.RawMessage) string {
	var e struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		return e.Message
	}
	return rawText(raw)
}

// summary renders a short human line for a tool call ("bash: ls -la").
func summary(name string, input json.RawMessage) string { return ToolSummary(name, input) }

// ToolSummary renders the short human line of a tool call from its JSON
// input: the name, then the first of its command, path, pattern, URL,
// query or description arguments ("bash: ls -la"), whitespace folded and cut
// at 200 characters. The JSON-line providers (kimi, pi) use it too.
func ToolSummary(name string, input json.RawMessage) string {
	var v map[string]any
	_ = json.Unmarshal(input, &v)
	arg := ""
	for _, k := range []string{"command", "filePath", "file_path", "path", "pattern", "url", "query", "description"} {
		if s, ok := v[k].(string); ok && s != "" {
			arg = s
			break
		}
	}
	arg = strings.Join(strings.Fields(arg), " ")
	if arg == "" {
		return name
	}
	return name + ": " + agent.Truncate(arg, 200)
}

// session tracks the native session id and reports changes once.
type session struct{ id string }

// update returns a session.updated event when id is new.
func (s *session) update(id, model string) []agent.Event {
	if id == "" || id == s.id {
		return nil
	}
	s.id = id
	return []agent.Event{{Type: agent.EventSessionUpdated, SessionID: id, Model: model}}
}

// usageSum accumulates per-step usage into the run's cumulative total.
type usageSum struct{ u agent.Usage }

func (s *usageSum) add(in, out, cacheRead, cacheWrite int64, cost float64) agent.Event {
	s.u.InputTokens += in
	s.u.OutputTokens += out
	s.u.CacheReadTokens += cacheRead
	s.u.CacheCreationTokens += cacheWrite
	s.u.CostUSD += cost
	u := s.u
	return agent.Event{Type: agent.EventUsageUpdated, Usage: &u}
}

// textJoin separates successive whole assistant messages with a blank line
// so paragraphs do not run together when deltas are whole messages.
type textJoin struct {
	out    bool
	lastNL bool
}

func (j *textJoin) next(s string) string {
	if s == "" {
		return ""
	}
	if j.out && !j.lastNL && !strings.HasPrefix(s, "\n") {
		s = "\n\n" + s
	}
	j.out, j.lastNL = true, strings.HasSuffix(s, "\n")
	return s
}

// turn is the state the tool-calling dialects' parsers share: the native
// session (reported once per change), the model last named, the joining of
// whole messages and the names of the tools started, by call id. The
// provider id names the dialect in native envelopes.
type turn struct {
	provider agent.ProviderID
	session  session
	join     textJoin
	tools    map[string]string
	model    string
}

func newTurn(provider agent.ProviderID, known string) turn {
	return turn{provider: provider, session: session{id: known}, tools: map[string]string{}}
}

// seen notes a record's session and model: a session.updated when the
// session is new.
func (t *turn) seen(sessionID, model string) []agent.Event {
	if model != "" {
		t.model = model
	}
	return t.session.update(sessionID, t.model)
}

// started is tool.started for call id, its name remembered for completed.
func (t *turn) started(kind, id, name string, input json.RawMessage) agent.Event {
	t.tools[id] = name
	input = ToolInput(input)
	return agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{
		ID: id, Name: name, Input: input, Summary: summary(name, input),
	}, Native: nativeRef(t.provider, kind, id)}
}

// completed is tool.completed for call id (output bounded).
func (t *turn) completed(kind, id, output string, isErr bool) agent.Event {
	return agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{
		ID: id, Name: t.tools[id], Output: agent.Truncate(output, MaxToolOutput), IsError: isErr,
	}, Native: nativeRef(t.provider, kind, id)}
}

// text is the assistant.delta of a whole message (none when it is empty),
// joined to the previous one.
func (t *turn) text(s string) []agent.Event {
	if s = t.join.next(s); s == "" {
		return nil
	}
	return []agent.Event{{Type: agent.EventAssistantDelta, Text: s}}
}

// unknown is the provider.native event of a valid record no mapping took,
// its kind type[/subtype] ("unknown" without a type).
func (t *turn) unknown(typ, subtype string, line []byte) agent.Event {
	kind := typ
	if subtype != "" {
		kind += "/" + subtype
	}
	if kind == "" {
		kind = "unknown"
	}
	return native(t.provider, kind, line)
}
