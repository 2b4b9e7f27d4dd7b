// Rendering chat events as terminal text.

package console

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/chatops"
)

// renderer prints a chat's events to a terminal as they arrive. It is used from
// one goroutine.
type renderer struct {
	w io.Writer
	// midLine is true when the last text written did not end a line.
	midLine bool
	started map[agent.RunID]time.Time
	usage   map[agent.RunID]*agent.Usage
}

func newRenderer(w io.Writer) *renderer {
	return &renderer{w: w, started: map[agent.RunID]time.Time{}, usage: map[agent.RunID]*agent.Usage{}}
}

// render prints one event and returns the decoded agent event.
func (r *renderer) render(ev chatops.Event) agent.Event {
	en, err := chatlog.Decode(ev.Type, ev.Payload)
	if err != nil {
		r.line(fmt.Sprintf("[unreadable event %d: %v]", ev.Seq, err))
		return agent.Event{}
	}
	e := en.Agent
	switch e.Type {
	case agent.EventRunStarted:
		r.started[ev.RunID] = ev.At
	case agent.EventAssistantDelta:
		r.text(e.Text)
	case agent.EventUsageUpdated:
		r.usage[ev.RunID] = e.Usage
	case agent.EventToolStarted:
		if e.Tool != nil {
			r.line("  ⏺ " + oneLine(toolSummary(e.Tool), 160))
		}
	case agent.EventToolCompleted:
		if e.Tool != nil && e.Tool.IsError {
			r.line("  ✗ " + oneLine(e.Tool.Output, 160))
		}
	case agent.EventSystem:
		if e.Text != "" {
			r.line("[" + e.Text + "]")
		}
	case agent.EventInteractionRequested:
		if e.Interaction != nil {
			r.line(Card(e.Interaction))
		}
	case agent.EventInteractionResolved:
		if e.Resolution != nil {
			r.line(fmt.Sprintf("  → %s", e.Resolution.Status))
		}
	case agent.EventRunCompleted:
		r.line(r.footer(ev))
	case agent.EventRunFailed:
		r.line("error: " + e.Text)
	case agent.EventRunInterrupted:
		r.line("[stopped]")
	}
	return e
}

// footer summarizes a completed run: duration, tokens and cost.
func (r *renderer) footer(ev chatops.Event) string {
	parts := []string{"done"}
	if t, ok := r.started[ev.RunID]; ok && !t.IsZero() && !ev.At.IsZero() {
		parts = append(parts, ev.At.Sub(t).Round(100*time.Millisecond).String())
	}
	if u := r.usage[ev.RunID]; u != nil {
		parts = append(parts, fmt.Sprintf("%d in / %d out tokens", u.InputTokens+u.CacheReadTokens+u.CacheCreationTokens, u.OutputTokens))
		if u.CostUSD > 0 {
			parts = append(parts, fmt.Sprintf("$%.4f", u.CostUSD))
		}
	}
	delete(r.started, ev.RunID)
	delete(r.usage, ev.RunID)
	return "— " + strings.Join(parts, " · ")
}

// text writes streamed text as is.
func (r *renderer) text(s string) {
	if s == "" {
		return
	}
	io.WriteString(r.w, s)
	r.midLine = !strings.HasSuffix(s, "\n")
}

// line writes s on a line of its own.
func (r *renderer) line(s string) {
	if r.midLine {
		io.WriteString(r.w, "\n")
	}
	io.WriteString(r.w, s+"\n")
	r.midLine = false
}

func toolSummary(t *agent.Tool) string {
	if t.Summary != "" {
		return t.Summary
	}
	return t.Name
}

// Card renders an approval or question for a terminal, with how to answer.
func Card(in *agent.Interaction) string {
	var sb strings.Builder
	title := in.Title
	switch {
	case in.Command != "":
		title = "Run this command?"
	case title == "":
		title = strings.ReplaceAll(string(in.Kind), "_", " ")
	}
	fmt.Fprintf(&sb, "? %s", title)
	if in.Command != "" {
		fmt.Fprintf(&sb, "\n    $ %s", in.Command)
	}
	if in.Reason != "" {
		fmt.Fprintf(&sb, "\n    %s", in.Reason)
	}
	if in.Diff != "" {
		fmt.Fprintf(&sb, "\n%s", indent(in.Diff, "    "))
	}
	for _, q := range in.Questions {
		fmt.Fprintf(&sb, "\n    %s", q.Text)
		for i, o := range q.Options {
			fmt.Fprintf(&sb, "\n      %d. %s", i+1, o)
		}
	}
	if in.Kind == agent.KindQuestion {
		sb.WriteString("\n  " + questionHint(in))
	} else {
		sb.WriteString("\n  [y] approve · [a] approve for this session · [n] decline · [s] stop")
	}
	sb.WriteString("  " + deadline(in))
	return sb.String()
}

// questionHint says how to answer a question card.
func questionHint(in *agent.Interaction) string {
	var options, other, multi bool
	for _, q := range in.Questions {
		options = options || len(q.Options) > 0
		other = other || len(q.Options) == 0 || q.AllowOther
		multi = multi || q.MultiSelect
	}
	var how []string
	if options {
		h := "an option's number"
		if multi {
			h += " (several: 1,3)"
		}
		how = append(how, h)
	}
	if other {
		how = append(how, "your own text")
	}
	if len(how) == 0 {
		how = []string{"your own text"}
	}
	if len(in.Questions) > 1 {
		return "answer each question in turn with " + strings.Join(how, " or ") + ", or 'n' to decline"
	}
	return "answer with " + strings.Join(how, " or ") + ", or 'n' to decline"
}

// deadline says when an unanswered card resolves itself: the chat's policy
// declines it at ExpiresAt, the agent goes on without an answer at
// AutoResolveAt, whichever comes first.
func deadline(in *agent.Interaction) string {
	switch {
	case !in.AutoResolveAt.IsZero() && (in.ExpiresAt.IsZero() || in.AutoResolveAt.Before(in.ExpiresAt)):
		return fmt.Sprintf("(the agent goes on without an answer at %s)", in.AutoResolveAt.Local().Format("15:04:05"))
	case !in.ExpiresAt.IsZero():
		return fmt.Sprintf("(declined at %s if unanswered)", in.ExpiresAt.Local().Format("15:04:05"))
	}
	return "(waiting for your answer)"
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}

func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > max {
		s = s[:max] + "…"
	}
	return s
}
