// stream.go: what a native stream is sent. The outbox remembers what each
// streamed message already shows (its text, the task cards and the plan) and
// sends only the difference, in the order things happened: the text before a
// tool call, the call's card, the text after it.

package outbox

import (
	"encoding/json"
	"strings"

	"github.com/threadline-bot/threadline/chatops/render"
)

// Chunk is one piece a native stream adds, in order: Markdown text, a task
// card (added, or updated in place by its ID), or the plan (replacing the
// one shown). Exactly one field is set.
type Chunk struct {
	Markdown string
	Task     *render.Step
	Plan     *render.Plan
}

// streamed is what a streamed message shows so far.
type streamed struct {
	text  string
	tasks map[string]render.Step
	plan  string // the JSON of the plan shown ("" for none)
}

// streamBody is the Markdown a native stream shows for v: a placeholder shows
// nothing, so that the answer's text can be appended to it.
func streamBody(v render.View) string {
	if v.Working {
		return ""
	}
	return v.Body
}

// diff returns the chunks that bring the stream from st to v and the state
// after them; ok is false when v is not an extension of what was streamed
// (its text does not start with the streamed text).
func (st streamed) diff(v render.View) ([]Chunk, streamed, bool) {
	body := streamBody(v)
	if !strings.HasPrefix(body, st.text) {
		return nil, st, false
	}
	next := streamed{text: body, tasks: make(map[string]render.Step, len(v.Tasks)), plan: st.plan}
	for id, t := range st.tasks {
		next.tasks[id] = t
	}
	var out []Chunk
	pos := len(st.text)
	text := func(to int) {
		if to > pos {
			out = append(out, Chunk{Markdown: body[pos:to]})
			pos = to
		}
	}
	var changed []Chunk
	for _, t := range v.Tasks {
		old, sent := st.tasks[t.ID]
		if !sent {
			// A new card goes where its call began: after the text before it.
			text(min(max(t.At, pos), len(body)))
			task := t
			out = append(out, Chunk{Task: &task})
		} else if old.Status != t.Status || old.Output != t.Output || old.Title != t.Title {
			task := t
			changed = append(changed, Chunk{Task: &task})
		}
		next.tasks[t.ID] = t
	}
	text(len(body))
	out = append(out, changed...)
	if v.Plan != nil {
		b, _ := json.Marshal(v.Plan)
		if string(b) != st.plan {
			p := *v.Plan
			out = append(out, Chunk{Plan: &p})
			next.plan = string(b)
		}
	}
	return out, next, true
}
