// OneShot: `threadline run`'s terminal front-end, one prompt followed to the
// end of its run (text or --events jsonl on stdout, notes and approval
// prompts on stderr).

package console

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/chatops"
)

// ErrFeedClosed is returned when the chat's event feed ends before the run.
var ErrFeedClosed = errors.New("console: event feed closed")

// OneShot sends one prompt and follows its run.
type OneShot struct {
	Bot *chatops.Chats
	// In answers approval prompts when Ask.
	In io.Reader
	// Out gets the agent's text, or the events as JSON lines with JSONL.
	Out io.Writer
	// Err gets notes ("run failed", what an approval was answered) and the
	// approval prompts.
	Err io.Writer
	// Interrupts delivers Ctrl-C presses: each stops the run.
	Interrupts <-chan struct{}
	// By names the user in the chat's events.
	By string
	// Ask asks approvals on Err and reads the answers from In; otherwise the
	// service's policy answers them.
	Ask bool
	// Policy names that policy in notes ("deny", "accept").
	Policy string
	// JSONL prints every event of the run as a flat JSON line (EventLine).
	JSONL bool
}

// oneShotRun is the state of one followed run.
type oneShotRun struct {
	*OneShot
	chatID  agent.ChatID
	runID   agent.RunID
	lines   <-chan string
	midLine bool
	asked   map[string]string // interaction id → what was asked
}

// Run sends text to the chat, prints its run as it goes and returns the run
// once it has ended (its Status is final). When ctx ends the run is stopped
// and ctx's error returned.
func (o *OneShot) Run(ctx context.Context, chatID agent.ChatID, text string) (*prompt.Run, error) {
	seq, err := o.Bot.LastSeq(ctx, chatID)
	if err != nil {
		return nil, err
	}
	subCtx, cancelSub := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSub()
	feed := o.Bot.Subscribe(subCtx, chatID, seq)
	run, err := o.Bot.Send(ctx, chatops.Prompt{ChatID: chatID, Text: text, By: o.By, Interactive: o.Ask})
	if err != nil {
		return nil, err
	}
	s := &oneShotRun{OneShot: o, chatID: chatID, runID: run.ID, asked: map[string]string{}}
	if o.Ask {
		s.lines = readLines(ctx, o.In)
	}
	for ended := false; !ended; {
		select {
		case <-o.Interrupts:
			o.Bot.Stop(chatID)
		case <-ctx.Done():
			o.Bot.Stop(chatID)
			<-run.Done()
			return run, ctx.Err()
		case ev, ok := <-feed:
			if !ok {
				return nil, ErrFeedClosed
			}
			if ev.RunID != run.ID {
				continue
			}
			if ended, err = s.show(ctx, ev); err != nil {
				return nil, err
			}
		}
	}
	s.endLine()
	<-run.Done()
	return run, nil
}

// show prints one event of the run and reports whether it ended the run.
func (s *oneShotRun) show(ctx context.Context, ev chatops.Event) (bool, error) {
	if s.JSONL {
		line, err := EventLine(ev)
		if err != nil {
			return false, err
		}
		if _, err := s.Out.Write(line); err != nil {
			return false, err
		}
	}
	e, err := chatlog.DecodeAgent(ev.Type, ev.Payload)
	if err != nil {
		return false, nil // not an agent event (user.message, run.started)
	}
	switch e.Type {
	case agent.EventInteractionRequested:
		if e.Interaction != nil {
			s.asked[e.Interaction.ID] = interactionLabel(e.Interaction)
			if s.Ask {
				s.ask(ctx, e.Interaction)
			}
		}
	case agent.EventInteractionResolved:
		if r := e.Resolution; r != nil {
			s.endLine()
			how := "--interactions " + s.Policy
			if r.By != "policy" {
				how = "by " + r.By
			}
			fmt.Fprintf(s.Err, "threadline: %s %s (%s)\n", r.Status, s.asked[r.InteractionID], how)
		}
	case agent.EventAssistantDelta:
		if !s.JSONL {
			io.WriteString(s.Out, e.Text)
			s.midLine = e.Text != "" && e.Text[len(e.Text)-1] != '\n'
		}
	case agent.EventSystem:
		if e.Subtype == prompt.SubtypeVersionNotice { // once per agent@version in a chat
			s.endLine()
			fmt.Fprintf(s.Err, "threadline: %s\n", e.Text)
		}
	case agent.EventRunFailed:
		fmt.Fprintf(s.Err, "threadline: run failed: %s\n", e.Text)
	case agent.EventRunInterrupted:
		fmt.Fprintln(s.Err, "threadline: run interrupted")
	}
	return e.Type.Terminal(), nil
}

// ask shows the card on Err and answers it with the next line of In (end of
// input declines; Ctrl-C stops the turn).
func (s *oneShotRun) ask(ctx context.Context, in *agent.Interaction) {
	s.endLine()
	fmt.Fprintln(s.Err, Card(in))
	fmt.Fprint(s.Err, "> ")
	var line string
	select {
	case l, ok := <-s.lines:
		line = l
		if !ok {
			line = "n" // no more input: decline
		}
	case <-s.Interrupts:
		line = "s" // Ctrl-C at the prompt stops the turn
	case <-ctx.Done():
		return
	}
	if err := s.Bot.Respond(ctx, s.chatID, s.runID, Answer(in, strings.TrimSpace(line), s.By)); err != nil {
		fmt.Fprintln(s.Err, "threadline:", err)
	}
}

// endLine ends streamed text that stopped mid-line before a note.
func (s *oneShotRun) endLine() {
	if s.midLine {
		io.WriteString(s.Out, "\n")
		s.midLine = false
	}
}

// EventLine renders a chat event as one flat JSON line: the event's own
// fields plus type, seq, chat_id, run_id and at.
func EventLine(ev chatops.Event) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	t, _ := json.Marshal(ev.Type)
	b.Write(t)
	b.WriteString(`,"seq":` + strconv.FormatInt(ev.Seq, 10) + `,"chat_id":`)
	id, _ := json.Marshal(ev.ChatID)
	b.Write(id)
	b.WriteString(`,"run_id":`)
	rid, _ := json.Marshal(ev.RunID)
	b.Write(rid)
	b.WriteString(`,"at":`)
	at, _ := json.Marshal(ev.At)
	b.Write(at)
	var fields map[string]json.RawMessage
	if len(ev.Payload) > 0 {
		if err := json.Unmarshal(ev.Payload, &fields); err != nil {
			return nil, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		switch k {
		case "type", "seq", "chat_id", "run_id", "at":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// interactionLabel names what an interaction asked, in a few words.
func interactionLabel(in *agent.Interaction) string {
	switch {
	case in.Command != "":
		return "`" + in.Command + "`"
	case in.Title != "":
		return in.Title
	}
	return string(in.Kind)
}

// readLines delivers r's lines until it ends or ctx does.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
