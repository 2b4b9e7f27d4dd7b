// OpenCode (and MiMo Code) `run --format json` events → agent.Events.

package jsonstream

import (
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// openCodeEvent is one `opencode run --format json` line (1.18.33).
type openCodeEvent struct {
	Type      string          `json:"type"`
	SessionID string          `json:"sessionID"`
	Part      json.RawMessage `json:"part"`
	Error     json.RawMessage `json:"error"`
}

type openCodePart struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	Reason string `json:"reason"`
	State  *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   json.RawMessage `json:"output"`
		Error    json.RawMessage `json:"error"`
		Title    string          `json:"title"`
		Metadata struct {
			Exit *int `json:"exit"`
		} `json:"metadata"`
		Exit *int `json:"exit"`
	} `json:"state"`
	Tokens *struct {
		Input     int64 `json:"input"`
		Output    int64 `json:"output"`
		Reasoning int64 `json:"reasoning"`
		Cache     struct {
			Read  int64 `json:"read"`
			Write int64 `json:"write"`
		} `json:"cache"`
	} `json:"tokens"`
	Cost float64 `json:"cost"`
}

type openCodeError struct {
	Name string `json:"name"`
	Data struct {
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
	Message string `json:"message"`
}

// OpenCodeParser parses OpenCode's JSON events. MiMo Code, an OpenCode
// derivative, prints the same shapes. Use NewOpenCodeParser.
type OpenCodeParser struct {
	turn         // tools: the calls whose tool.started was emitted
	root  string // the first session seen; child sessions (subagents) do not end the run
	usage usageSum
	ended map[string]bool // callID → tool.completed emitted
}

// NewOpenCodeParser returns a parser for one run of provider id
// ("opencode-run", "mimo", "kilo-run") that continues session known (""
// when fresh).
func NewOpenCodeParser(id agent.ProviderID, known string) *OpenCodeParser {
	return &OpenCodeParser{turn: newTurn(id, known), ended: map[string]bool{}}
}

// Parse implements procrun.LineParser.
func (p *OpenCodeParser) Parse(line []byte) ([]agent.Event, error) {
	var ev openCodeEvent
	if err := json.Unmarshal(line, &ev); err != nil {
		return nil, fmt.Errorf("%s line: %w", p.provider, err)
	}
	if p.root == "" && ev.SessionID != "" {
		p.root = ev.SessionID
	}
	child := ev.SessionID != "" && ev.SessionID != p.root
	var part openCodePart
	if len(ev.Part) > 0 {
		if err := json.Unmarshal(ev.Part, &part); err != nil {
			return nil, fmt.Errorf("%s %s part: %w", p.provider, ev.Type, err)
		}
	}
	switch ev.Type {
	case "step_start":
		if child {
			return nil, nil
		}
		return p.session.update(ev.SessionID, ""), nil
	case "text":
		if child {
			return nil, nil
		}
		return p.text(part.Text), nil
	case "reasoning":
		if child || part.Text == "" {
			return nil, nil
		}
		return []agent.Event{{Type: agent.EventReasoningDelta, Text: part.Text}}, nil
	case "tool_use":
		return p.tool(&part), nil
	case "step_finish":
		return p.stepFinish(&part, child), nil
	case "error":
		if child {
			return []agent.Event{native(p.provider, "error", line)}, nil
		}
		return []agent.Event{{Type: agent.EventRunFailed, Text: p.errorText(ev.Error), Native: &agent.Native{Provider: p.provider, Kind: "error", Payload: agent.NativePayload(line, MaxNativePayload)}}}, nil
	}
	return []agent.Event{p.unknown(ev.Type, "", line)}, nil
}

func (p *OpenCodeParser) tool(part *openCodePart) []agent.Event {
	if part.CallID == "" || part.State == nil {
		return nil
	}
	st := part.State
	var out []agent.Event
	if _, ok := p.tools[part.CallID]; !ok {
		out = append(out, p.started("tool_use", part.CallID, part.Tool, st.Input))
	}
	switch st.Status {
	case "completed", "error", "failed":
	default:
		return out
	}
	if p.ended[part.CallID] {
		return out
	}
	p.ended[part.CallID] = true
	output := rawText(st.Output)
	isErr := st.Status != "completed"
	if e := rawText(st.Error); e != "" {
		output, isErr = e, true
	}
	for _, code := range []*int{st.Exit, st.Metadata.Exit} {
		if code != nil && *code != 0 {
			isErr = true
		}
	}
	return append(out, p.completed("tool_use", part.CallID, output, isErr))
}

// stepFinish reports usage and ends the run on the root session's final
// step. Reasons: "tool-calls" continues; "stop" completes; "length"
// completes with a notice (the answer was cut); any other reason is held,
// so a run that then exits without a known end fails.
func (p *OpenCodeParser) stepFinish(part *openCodePart, child bool) []agent.Event {
	if child {
		return nil
	}
	var out []agent.Event
	if t := part.Tokens; t != nil {
		out = append(out, p.usage.add(t.Input, t.Output, t.Cache.Read, t.Cache.Write, part.Cost))
	}
	switch part.Reason {
	case "stop", "end_turn":
		out = append(out, agent.Event{Type: agent.EventRunCompleted})
	case "length":
		out = append(out,
			agent.Event{Type: agent.EventSystem, Subtype: "max_tokens", Text: "The answer was cut off at the model's output limit."},
			agent.Event{Type: agent.EventRunCompleted})
	}
	return out
}

func (p *OpenCodeParser) errorText(raw json.RawMessage) string {
	var e openCodeError
	if json.Unmarshal(raw, &e) == nil {
		msg := e.Data.Message
		if msg == "" {
			msg = e.Message
		}
		switch {
		case msg != "" && e.Data.StatusCode != 0:
			return fmt.Sprintf("%s: %s (HTTP %d)", e.Name, msg, e.Data.StatusCode)
		case msg != "" && e.Name != "":
			return e.Name + ": " + msg
		case msg != "":
			return msg
		case e.Name != "":
			return e.Name
		}
	}
	if s := rawText(raw); s != "" {
		return agent.Truncate(s, 1024)
	}
	return string(p.provider) + " reported an error"
}
