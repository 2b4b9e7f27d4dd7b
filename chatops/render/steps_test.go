package render_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/chatops/render"
)

// Tool calls become steps in the order they ran, each placed where it began
// in the answer's text, with a status and a clipped output; the activity says
// what the agent does now; the model is the one the agent reported.
func TestStepsInPlace(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude"})
	r := render.NewRun(render.RenderOptions{}, "c1", "r1", "")
	apply := func() {
		r.Apply(l.evs[len(l.evs)-1])
	}
	apply()
	v := r.Views()[0].View
	if v.Status != "claude · 0s" || v.Activity != render.ActivityThinking || !v.Working {
		t.Fatalf("start: status %q activity %q working %v", v.Status, v.Activity, v.Working)
	}
	l.add(time.Second, agent.Event{Type: agent.EventSessionUpdated, SessionID: "s1", Model: "claude-opus-4-5"})
	apply()
	l.add(time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "I'll create the file now."})
	apply()
	l.add(2*time.Second, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "b1", Name: "Bash", Summary: "Bash: touch a.txt"}})
	apply()
	v = r.Views()[0].View
	if v.Activity != "is running Bash…" || len(v.Tasks) != 1 || v.Tasks[0].Status != render.StatusRunning || v.Tasks[0].At != len("I'll create the file now.") {
		t.Fatalf("running: activity %q tasks %+v", v.Activity, v.Tasks)
	}
	if !strings.Contains(v.Status, "claude-opus-4-5") || strings.Contains(v.Status, "(default)") {
		t.Errorf("status %q does not show the reported model", v.Status)
	}
	long := strings.Repeat("output line\n", 100)
	l.add(3*time.Second, agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "b1", Name: "Bash", Output: long}})
	apply()
	l.add(4*time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "Tool finished."})
	apply()
	v = r.Views()[0].View
	if v.Body != "I'll create the file now.\n\nTool finished." {
		t.Errorf("body %q: the paragraphs around the tool call are glued", v.Body)
	}
	st := v.Tasks[0]
	if st.Status != render.StatusDone || st.Title != "Bash: touch a.txt" || len([]rune(st.Output)) > render.OutputLimit || !strings.HasPrefix(st.Output, "output line") {
		t.Errorf("finished step %+v", st)
	}
	if v.Activity != render.ActivityThinking || strings.Join(v.Steps, "|") != "✓ Bash: touch a.txt" {
		t.Errorf("activity %q, steps %q", v.Activity, v.Steps)
	}
	l.add(5*time.Second, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "b2", Name: "Read", Summary: "Read: a.txt"}})
	apply()
	l.add(5*time.Second, agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "b2", Name: "Read", IsError: true, Output: "no such file"}})
	apply()
	l.add(9*time.Second, agent.Event{Type: agent.EventRunCompleted})
	apply()
	v = r.Views()[0].View
	if len(v.Tasks) != 2 || v.Tasks[1].Status != render.StatusFailed || v.Tasks[1].At != len(v.Body) || v.Tasks[1].Output != "no such file" {
		t.Errorf("final tasks %+v", v.Tasks)
	}
	if v.Status != "claude · claude-opus-4-5" || strings.Count(v.Status+v.Footer, "9s") != 1 || v.Activity != "" {
		t.Errorf("final status %q footer %q activity %q", v.Status, v.Footer, v.Activity)
	}
}

// A step stays with the part whose text it followed, so the earlier parts
// of a long answer keep their steps when the next part begins.
func TestStepsFollowTheirPart(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	para := strings.Repeat("word ", 30) + "\n\n" // 152 bytes
	l.add(0, agent.Event{Type: agent.EventAssistantDelta, Text: para})
	l.add(0, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Summary: "Bash: one"}})
	opts := render.RenderOptions{PartLimit: 200}
	first := render.RenderRun("c1", "", opts, l.evs)
	for range 3 {
		l.add(0, agent.Event{Type: agent.EventAssistantDelta, Text: para})
	}
	l.add(0, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t2", Name: "Bash", Summary: "Bash: two"}})
	l.add(0, agent.Event{Type: agent.EventAssistantDelta, Text: "end"})
	vs := render.RenderRun("c1", "", opts, l.evs)
	if len(vs) < 3 {
		t.Fatalf("%d parts", len(vs))
	}
	if len(first[0].View.Tasks) != 1 || len(vs[0].View.Tasks) != 1 || vs[0].View.Tasks[0].ID != "t1" {
		t.Fatalf("part 0 tasks: first %+v, later %+v", first[0].View.Tasks, vs[0].View.Tasks)
	}
	last := vs[len(vs)-1].View
	if len(last.Tasks) != 1 || last.Tasks[0].ID != "t2" || !strings.HasSuffix(last.Body[:last.Tasks[0].At], "\n\n") {
		t.Fatalf("last part tasks %+v in %q", last.Tasks, last.Body)
	}
	for _, sv := range vs[1 : len(vs)-1] {
		if len(sv.View.Tasks) != 0 {
			t.Errorf("%s has tasks %+v", sv.Slot, sv.View.Tasks)
		}
	}
	// The compact lines on the last part list every step.
	if strings.Join(last.Steps, "|") != "⏺ Bash: one|⏺ Bash: two" {
		t.Errorf("steps %q", last.Steps)
	}
}

// The agent's plan is the last part's Plan, each update replacing the
// previous one, and also shows as compact lines.
func TestPlan(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, agent.Event{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Items: []agent.PlanItem{
		{Text: "Read the code", Status: agent.PlanCompleted}, {Text: "Fix the bug", Status: agent.PlanInProgress}, {Text: "Run the tests", Status: agent.PlanPending}}}})
	v := render.RenderRun("c1", "", render.RenderOptions{}, l.evs)[0].View
	want := &render.Plan{Title: "Plan", Items: []render.PlanItem{
		{Text: "Read the code", Status: render.StatusDone}, {Text: "Fix the bug", Status: render.StatusRunning}, {Text: "Run the tests", Status: render.StatusPending}}}
	if g, w := mustJSON(v.Plan), mustJSON(want); g != w {
		t.Fatalf("plan %s, want %s", g, w)
	}
	if strings.Join(v.Steps, "|") != "📋 Plan|  ✓ Read the code|  ⏺ Fix the bug|  ○ Run the tests" {
		t.Errorf("plan lines %q", v.Steps)
	}
	l.add(time.Second, agent.Event{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Title: "Ship it", Items: []agent.PlanItem{{Text: "Release", Status: agent.PlanCompleted}}}})
	v = render.RenderRun("c1", "", render.RenderOptions{}, l.evs)[0].View
	if v.Plan.Title != "Ship it" || len(v.Plan.Items) != 1 || v.Plan.Items[0].Status != render.StatusDone {
		t.Errorf("replaced plan %+v", v.Plan)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
