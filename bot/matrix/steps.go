// steps.go: a run's work in its Matrix message: each tool step as a compact
// list item where it ran in the answer's text (the text before the call, the
// steps, the text after), the agent's plan as an ordered list with each
// item's mark, both with a plain-text fallback in the body. The model is
// chatops' (render.Step, render.Plan): the same views render the same
// bytes, live or on replay.

package matrix

import (
	"html"
	"regexp"
	"strings"

	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
)

// maxTaskItems is how many steps one message lists one by one; older steps
// of a busy message are summed up by group ("✓ 7 steps: Read, Bash"), so the
// steps stay within the room PartLimit leaves.
const maxTaskItems = 12

// chunk is a stretch of the answer's text and the steps that followed it.
type chunk struct {
	text  string
	tasks []render.Step
	// first is the index of the chunk's first task among the message's.
	first int
}

// interleave cuts body where its tasks began. A step that began inside a
// code block is shown after the block, so that every piece of text renders
// on its own.
func interleave(body string, tasks []render.Step) []chunk {
	var out []chunk
	from := 0
	for i, t := range tasks {
		at := min(max(t.At, from), len(body))
		if fenceOpen(body[:at]) {
			at = fenceEnd(body, at)
		}
		if n := len(out); n > 0 && at == from {
			out[n-1].tasks = append(out[n-1].tasks, t)
			continue
		}
		out = append(out, chunk{text: body[from:at], tasks: []render.Step{t}, first: i})
		from = at
	}
	return append(out, chunk{text: body[from:], first: len(tasks)})
}

// fenceOpen reports whether md ends inside a fenced code block.
func fenceOpen(md string) bool {
	open := false
	for line := range strings.SplitSeq(md, "\n") {
		if t := strings.TrimLeft(line, " "); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			open = !open
		}
	}
	return open
}

// fenceEnd is the end of the line that closes the code block open at at (or
// the end of md).
func fenceEnd(md string, at int) int {
	for at < len(md) {
		nl := strings.IndexByte(md[at:], '\n')
		end := len(md)
		if nl >= 0 {
			end = at + nl + 1
		}
		line := strings.TrimLeft(md[at:end], " ")
		at = end
		if strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~") {
			return at
		}
	}
	return len(md)
}

// taskLines is how a run of steps shows: one by one, or, for old steps of a
// busy message, summed up in one line.
func taskLines(tasks []render.Step, first, total int) (plain []string, items []string) {
	hidden := max(total-maxTaskItems, 0) // the message's first steps are summed up
	var sum []render.Step
	for i, t := range tasks {
		if first+i < hidden {
			sum = append(sum, t)
			continue
		}
		plain = append(plain, t.Line())
		item := html.EscapeString(t.Status.Mark()) + " <code>" + html.EscapeString(t.Title) + "</code>"
		if t.Status == render.StatusFailed && t.Output != "" {
			out := firstLine(t.Output)
			plain[len(plain)-1] += ": " + out
			item += " — <em>" + html.EscapeString(out) + "</em>"
		}
		items = append(items, item)
	}
	if len(sum) > 0 {
		line := summary(sum)
		plain = append([]string{line}, plain...)
		items = append([]string{html.EscapeString(line)}, items...)
	}
	return plain, items
}

// summary sums steps up in one line: "✓ 7 steps: Read, Bash" (✗ when one
// failed), naming the first few distinct tools.
func summary(steps []render.Step) string {
	mark := render.StatusDone.Mark()
	var tools []string
	for _, s := range steps {
		switch s.Status {
		case render.StatusFailed:
			mark = render.StatusFailed.Mark()
		case render.StatusRunning, render.StatusPending:
			if mark != render.StatusFailed.Mark() {
				mark = s.Status.Mark()
			}
		}
		name := s.Tool
		if name == "" {
			name, _, _ = strings.Cut(s.Title, ":")
		}
		if len(tools) < 4 && !contains(tools, name) {
			tools = append(tools, name)
		}
	}
	line := mark + " " + itoa(len(steps)) + " steps"
	if len(steps) == 1 {
		line = mark + " 1 step"
	}
	if len(tools) > 0 {
		line += ": " + strings.Join(tools, ", ")
	}
	return line
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return clipText(s, 200)
}

// bodyParts renders the body with its steps in place: the plain text and the
// HTML pieces.
func bodyParts(v chatops.View) (plain []string, htmlParts []string) {
	if v.Body == "" && len(v.Tasks) == 0 {
		return nil, nil
	}
	for _, c := range interleave(v.Body, v.Tasks) {
		if t := strings.TrimSpace(c.text); t != "" {
			plain = append(plain, strings.Trim(c.text, "\n"))
			htmlParts = append(htmlParts, renderMarkdown(c.text))
		}
		if len(c.tasks) == 0 {
			continue
		}
		lines, items := taskLines(c.tasks, c.first, len(v.Tasks))
		plain = append(plain, strings.Join(lines, "\n"))
		htmlParts = append(htmlParts, "<ul><li>"+strings.Join(items, "</li><li>")+"</li></ul>")
	}
	return plain, htmlParts
}

// planParts renders the plan: its title, then its items in order with their
// marks; the item in progress is bold.
func planParts(p *render.Plan) (plain string, htmlPart string) {
	if p == nil {
		return "", ""
	}
	var b strings.Builder
	b.WriteString("<p><strong>" + html.EscapeString("📋 "+p.Title) + "</strong></p><ol>")
	for _, it := range p.Items {
		text := html.EscapeString(it.Text)
		switch it.Status {
		case render.StatusRunning:
			text = "<strong>" + text + "</strong>"
		case render.StatusDone:
			text = "<del>" + text + "</del>"
		}
		b.WriteString("<li>" + html.EscapeString(it.Status.Mark()) + " " + text + "</li>")
	}
	b.WriteString("</ol>")
	return strings.Join(p.Lines(), "\n"), b.String()
}

// earlierSteps is the step line that counts the steps View.Steps leaves out.
var earlierSteps = regexp.MustCompile(`^… \d+ earlier steps$`)

// stepNotes are the view's compact step lines that are not its steps and
// plan, which the message shows as lists: the notes (a recovered session, an
// API retry), the note that the answer is longer than its messages.
func stepNotes(v chatops.View) []string {
	plan := map[string]bool{}
	for _, l := range v.Plan.Lines() {
		plan[l] = true
	}
	var out []string
	for _, s := range v.Steps {
		if plan[s] || earlierSteps.MatchString(s) || isStepLine(s) {
			continue
		}
		out = append(out, s)
	}
	return out
}

// isStepLine reports whether s is a step's compact line (render.Step.Line):
// a status mark, a space, the title.
func isStepLine(s string) bool {
	for _, st := range []render.StepStatus{render.StatusDone, render.StatusFailed, render.StatusRunning, render.StatusPending} {
		if strings.HasPrefix(s, st.Mark()+" ") {
			return true
		}
	}
	return false
}
