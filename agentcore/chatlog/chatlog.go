// Package chatlog is the typed schema of the persisted chat log: the payload
// types of the events a chat stores, their type names, Decode, and the folds
// read from the log (the visible transcript). It imports only agentcore/agent.
//
// A chat's log holds three kinds of payload:
//
//	type            payload
//	user.message    UserMessage (the prompt as the user sent it)
//	run.started     RunStarted (who started which agent and model)
//	anything else   agent.Event (what the provider emitted, scrubbed)
package chatlog

import (
	"encoding/json"
	"fmt"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Event types the prompt service persists besides the agent's own.
const (
	// TypeUserMessage is a user's prompt; its payload is a UserMessage.
	TypeUserMessage = "user.message"
	// TypeRunStarted opens a run; its payload is a RunStarted.
	TypeRunStarted = string(agent.EventRunStarted)
)

// UserMessage is the payload of a user.message event.
type UserMessage struct {
	Text string `json:"text"`
	By   string `json:"by,omitempty"`
	// Images is how many images came with the prompt (they are not stored).
	Images int `json:"images,omitempty"`
}

// RunStarted is the payload of a run.started event. Its JSON is also a valid
// agent.Event (type and model).
type RunStarted struct {
	Type  agent.EventType `json:"type"`
	Agent string          `json:"agent"`
	Model string          `json:"model,omitempty"`
	By    string          `json:"by,omitempty"`
}

// Entry is one decoded event payload.
type Entry struct {
	// Type is the event's type.
	Type string
	// User is set on a user.message.
	User *UserMessage
	// Run is set on a run.started.
	Run *RunStarted
	// Agent is the payload as an agent event: set on every type but
	// user.message (on run.started it carries the type and model). Its Type
	// is the event's type when the payload names none.
	Agent agent.Event
}

// Decode decodes the payload of an event of type typ. A payload that is not
// the JSON its type calls for (an empty one included) is an error.
func Decode(typ string, payload []byte) (Entry, error) {
	en := Entry{Type: typ}
	switch typ {
	case TypeUserMessage:
		var m UserMessage
		if err := json.Unmarshal(payload, &m); err != nil {
			return en, fmt.Errorf("chatlog: %s payload: %w", typ, err)
		}
		en.User = &m
		en.Agent.Type = agent.EventType(typ)
		return en, nil
	case TypeRunStarted:
		var r RunStarted
		if err := json.Unmarshal(payload, &r); err != nil {
			return en, fmt.Errorf("chatlog: %s payload: %w", typ, err)
		}
		en.Run = &r
	}
	ev, err := DecodeAgent(typ, payload)
	if err != nil {
		return en, err
	}
	en.Agent = ev
	return en, nil
}

// DecodeAgent decodes the payload of an agent event (every type but
// user.message). The event's Type is typ when the payload names none.
func DecodeAgent(typ string, payload []byte) (agent.Event, error) {
	var ev agent.Event
	if err := json.Unmarshal(payload, &ev); err != nil {
		return agent.Event{}, fmt.Errorf("chatlog: %s payload: %w", typ, err)
	}
	if ev.Type == "" {
		ev.Type = agent.EventType(typ)
	}
	return ev, nil
}
