// steps.go: the platform-neutral model of a run's work: its tool calls as
// steps (task cards on Slack, list items on Matrix, compact lines elsewhere),
// the agent's plan, and a short line of what the agent is doing now.

package render

import (
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// StepStatus is the state of a tool step or a plan item, as the views show it.
type StepStatus string

// Step and plan item states. The spellings are Slack's task statuses, which
// the other platforms map to their own marks.
const (
	StatusPending StepStatus = "pending"
	StatusRunning StepStatus = "in_progress"
	StatusDone    StepStatus = "complete"
	StatusFailed  StepStatus = "error"
)

// Step is one tool call of a run.
type Step struct {
	// ID is the tool call's id, unique within the run.
	ID string `json:"id"`
	// Tool is the tool's name ("Bash").
	Tool string `json:"tool,omitempty"`
	// Title is a short line from the tool and its input ("Bash: ls -la").
	Title  string     `json:"title"`
	Status StepStatus `json:"status"`
	// Output is the start of the tool's output, clipped to OutputLimit.
	Output string `json:"output,omitempty"`
	// At is where the step began in the message's body (a byte offset): the
	// text before it came before the call, the text after it after.
	At int `json:"at"`
}

// Plan is the agent's current plan (Claude's TodoWrite, Codex's plan, ACP
// plan entries).
type Plan struct {
	// Title is the plan's heading (the agent's, or "Plan").
	Title string     `json:"title"`
	Items []PlanItem `json:"items"`
}

// PlanItem is one step of a plan.
type PlanItem struct {
	Text   string     `json:"text"`
	Status StepStatus `json:"status"`
}

// OutputLimit bounds a step's output in the views (runes; Slack shows at
// most 256 on a task card).
const OutputLimit = 256

// Activity lines: what the agent is doing now, for a platform's status
// indicator (Slack's assistant thread status, "<app> is thinking…").
const (
	ActivityThinking = "is thinking…"
	ActivityWaiting  = "is waiting for an answer…"
)

// activityRunning is the activity while tool runs.
func activityRunning(tool string) string { return "is running " + oneLine(tool, 60) + "…" }

// Done reports whether the step has ended.
func (s Step) Done() bool { return s.Status == StatusDone || s.Status == StatusFailed }

// Mark is the one-character mark of a status on platforms without native
// task cards.
func (st StepStatus) Mark() string {
	switch st {
	case StatusDone:
		return "✓"
	case StatusFailed:
		return "✗"
	case StatusRunning:
		return "⏺"
	}
	return "○"
}

// Line is the step as a compact line ("✓ Bash: ls").
func (s Step) Line() string { return s.Status.Mark() + " " + s.Title }

// Lines are the plan as compact lines: its title, then one line per item.
func (p *Plan) Lines() []string {
	if p == nil {
		return nil
	}
	out := []string{"📋 " + p.Title}
	for _, it := range p.Items {
		out = append(out, "  "+it.Status.Mark()+" "+it.Text)
	}
	return out
}

func planFrom(p *agent.Plan) *Plan {
	if p == nil {
		return nil
	}
	out := &Plan{Title: oneLine(p.Title, 150)}
	if out.Title == "" {
		out.Title = "Plan"
	}
	for _, it := range p.Items {
		st := StatusPending
		switch it.Status {
		case agent.PlanInProgress:
			st = StatusRunning
		case agent.PlanCompleted:
			st = StatusDone
		}
		out.Items = append(out.Items, PlanItem{Text: oneLine(it.Text, 200), Status: st})
	}
	return out
}

// clipOutput keeps the start of a tool's output: at most OutputLimit runes,
// on one to a few lines, marked when cut.
func clipOutput(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	r := []rune(s)
	if len(r) <= OutputLimit {
		return s
	}
	return string(r[:OutputLimit-1]) + "…"
}
