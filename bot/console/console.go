// Package console is the terminal front-end: one chat in a terminal, built on
// chatops like the Slack and Matrix front-ends. Text streams as it arrives, tool
// calls show as short lines, Ctrl-C stops the running turn (twice when idle quits),
// and approvals are answered at the prompt.
package console

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
)

// Console is a terminal chat.
type Console struct {
	Bot *chatops.Chats
	In  io.Reader
	Out io.Writer
	// Interrupts delivers Ctrl-C presses.
	Interrupts <-chan struct{}
	// By names the user in the chat's events.
	By  string
	Log *slog.Logger
}

type pendingInteraction struct {
	runID string
	in    *agent.Interaction
}

// Run runs the chat until the input ends or the user quits.
func (c *Console) Run(ctx context.Context, chat chatops.Chat) error {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReader(c.In)
		for {
			s, err := br.ReadString('\n')
			if s != "" || err == nil {
				select {
				case lines <- strings.TrimRight(s, "\r\n"):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()

	r := newRenderer(c.Out)
	events, stopSub, err := c.follow(ctx, chat.ID)
	if err != nil {
		return err
	}
	defer func() { stopSub() }()
	var (
		runID         string
		pending       []pendingInteraction
		lastInterrupt time.Time
	)
	prompt := func() {
		if runID == "" {
			r.text("> ")
		}
	}
	prompt()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("the chat's event feed ended")
			}
			e := r.render(ev)
			switch {
			case e.Type == agent.EventInteractionRequested && e.Interaction != nil:
				pending = append(pending, pendingInteraction{runID: ev.RunID, in: e.Interaction})
			case e.Type == agent.EventInteractionResolved && e.Resolution != nil:
				pending = dropPending(pending, e.Resolution.InteractionID)
			case e.Type.Terminal() && ev.RunID == runID:
				runID, pending = "", nil
				prompt()
			}
		case <-c.Interrupts:
			if runID != "" {
				c.Bot.Stop(chat.ID)
				r.line("[stopping…]")
				continue
			}
			if time.Since(lastInterrupt) < 2*time.Second {
				r.line("")
				return nil
			}
			lastInterrupt = time.Now()
			r.line("(press Ctrl-C again or Ctrl-D to quit)")
			prompt()
		case line, ok := <-lines:
			if !ok {
				if runID != "" {
					c.Bot.Stop(chat.ID)
				}
				r.line("")
				return nil
			}
			text := strings.TrimSpace(line)
			r.midLine = false
			switch {
			case text == "":
				prompt()
			case len(pending) > 0:
				p := pending[0]
				if err := c.Bot.Respond(ctx, chat.ID, p.runID, Answer(p.in, text, c.By)); err != nil {
					r.line("error: " + err.Error())
				}
			default:
				if cmd, ok := chatops.ParseCommand(text); ok {
					res, err := c.Bot.Execute(ctx, chat.ID, cmd)
					if err != nil {
						r.line("error: " + err.Error())
						prompt()
						continue
					}
					r.line(res.Text)
					if res.Chat != nil {
						stopSub()
						if events, stopSub, err = c.follow(ctx, res.Chat.ID); err != nil {
							return err
						}
						chat, runID, pending = *res.Chat, "", nil
					}
					prompt()
					continue
				}
				if runID != "" {
					r.line("A turn is running: wait for it, or press Ctrl-C to stop it.")
					continue
				}
				run, err := c.Bot.Send(ctx, chatops.Prompt{ChatID: chat.ID, Text: text, By: c.By, Interactive: true})
				if err != nil {
					r.line("error: " + err.Error())
					prompt()
					continue
				}
				runID = run.ID
			}
		}
	}
}

// follow subscribes to the chat's new events until stop is called.
func (c *Console) follow(ctx context.Context, chatID string) (events <-chan chatops.Event, stop func(), err error) {
	seq, err := c.Bot.LastSeq(ctx, chatID)
	if err != nil {
		return nil, nil, fmt.Errorf("read chat %s: %w", chatID, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	return c.Bot.Subscribe(ctx, chatID, seq), cancel, nil
}

func dropPending(p []pendingInteraction, id string) []pendingInteraction {
	out := p[:0]
	for _, x := range p {
		if x.in.ID != id {
			out = append(out, x)
		}
	}
	return out
}

// Answer turns a typed line into a response to the interaction: y, a, n, s for
// approvals; an option number or free text for questions.
func Answer(in *agent.Interaction, text, by string) agent.InteractionResponse {
	resp := agent.InteractionResponse{InteractionID: in.ID, By: by}
	low := strings.ToLower(text)
	if in.Kind == agent.KindQuestion && len(in.Questions) > 0 {
		if low == "n" || low == "no" {
			resp.Decision = agent.DecisionDecline
			return resp
		}
		resp.Decision = agent.DecisionAnswer
		resp.Answers = map[string]string{}
		q := in.Questions[0]
		if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(q.Options) {
			resp.Answers[q.ID] = q.Options[n-1]
		} else {
			resp.Answers[q.ID] = text
		}
		return resp
	}
	switch low {
	case "y", "yes", "approve":
		resp.Decision = agent.DecisionApprove
	case "a", "always":
		resp.Decision = agent.DecisionApproveSession
	case "s", "stop":
		resp.Decision = agent.DecisionCancel
	default:
		resp.Decision = agent.DecisionDecline
	}
	return resp
}
