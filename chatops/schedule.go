package chatops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// ErrNoPrompt is StartThread without a prompt.
var ErrNoPrompt = errors.New("chatops: a new thread needs a prompt")

// StartThread starts a new thread in the channel of place (its Thread is
// ignored) the way "/threadline new <prompt>" does: it posts the root message
// headed by (a label such as "Schedule standup", shown as is), binds the
// thread to a new chat with the channel's defaults, agentName and project
// overriding them when set, and sends the prompt there in the thread's own
// actor. It returns the new chat once the prompt is sent (the run goes on);
// it never waits on another thread's actor. No allow list applies: the
// caller (a schedule an operator created) is trusted.
func (t *Desk) StartThread(ctx context.Context, place Place, by, agentName, project, prompt string) (agent.ChatID, error) {
	prompt = strings.TrimSpace(prompt)
	if prompt == "" {
		return "", ErrNoPrompt
	}
	s, err := t.surface(place.Platform)
	if err != nil {
		return "", err
	}
	top := place
	top.Thread = ""
	id, err := s.Post(ctx, top, View{Body: by + ": " + prompt})
	if err != nil {
		return "", fmt.Errorf("chatops: post the new thread in %s: %w", top, err)
	}
	p := top
	p.Thread = id
	u := User{Platform: place.Platform, ID: by}
	// The actor may still run f after call gave up on ctx: chat is shared.
	var chat atomic.Value
	err = t.call(ctx, p, u, "scheduled prompt", func(ctx context.Context, th *thread) error {
		rules := t.policy.Channel(p)
		if agentName != "" {
			rules.Agent = agentName
		}
		if project != "" {
			rules.Project = project
		}
		c, err := t.newChat(ctx, rules, nil)
		if err != nil {
			return t.fail(ctx, p, "I could not start a chat for this thread", err)
		}
		b, _, err := t.store.Bind(ctx, Binding{Place: p, ChatID: c.ID, CreatedBy: u.Qualified()})
		if err != nil {
			return t.fail(ctx, p, "I could not bind this thread", err)
		}
		th.binding = &b
		chat.Store(b.ChatID)
		t.log.InfoContext(ctx, "thread bound", logkey.Place, p.String(), logkey.ChatID, b.ChatID, logkey.By, u.Qualified())
		return t.send(ctx, th, b, promptOrigin{}, Message{Place: p, User: u, Text: prompt}, prompt, nil, nil)
	})
	c, _ := chat.Load().(agent.ChatID)
	return c, err
}

// Notice posts text at the top of place's channel (Thread empty) or in its
// thread.
func (t *Desk) Notice(ctx context.Context, place Place, text string) error {
	return t.notice(ctx, place, text)
}
