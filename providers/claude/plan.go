// Plans: Claude's todo tools → plan.updated.

package claude

import (
	"encoding/json"
	"regexp"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// plan follows the agent's todo list. TodoWrite sends the whole list in its
// input; the task tools of 2.1.x (TaskCreate, TaskUpdate, offered with
// CLAUDE_CODE_ENABLE_TODO_TOOLS=1) change one task at a time, so the list is
// kept here and each successful change emits it whole. The tool events are
// emitted as for any tool.
type plan struct {
	items []planTask
	tasks map[string]taskCall // tool_use id → a task call waiting for its result
}

type planTask struct {
	id   string
	item agent.PlanItem
}

type taskCall struct {
	tool string
	in   taskInput
}

// taskCreated reads the new task's id from TaskCreate's result
// ("Task #3 created successfully: …").
var taskCreated = regexp.MustCompile(`^Task #(\S+) created`)

// toolUse sees a tool call: TodoWrite's list is the plan at once; a task
// call waits for its result.
func (pl *plan) toolUse(id, name string, input json.RawMessage) []agent.Event {
	switch name {
	case "TodoWrite":
		var v todoInput
		if json.Unmarshal(input, &v) != nil || v.Todos == nil {
			return nil
		}
		pl.items = pl.items[:0]
		for _, t := range v.Todos {
			pl.items = append(pl.items, planTask{item: agent.PlanItem{Text: t.Content, Status: planStatus(t.Status)}})
		}
		return pl.event(id)
	case "TaskCreate", "TaskUpdate":
		var v taskInput
		if json.Unmarshal(input, &v) == nil {
			pl.tasks[id] = taskCall{tool: name, in: v}
		}
	}
	return nil
}

// toolResult applies a task call that succeeded.
func (pl *plan) toolResult(id, output string, isError bool) []agent.Event {
	call, ok := pl.tasks[id]
	if !ok {
		return nil
	}
	delete(pl.tasks, id)
	if isError {
		return nil
	}
	switch call.tool {
	case "TaskCreate":
		m := taskCreated.FindStringSubmatch(output)
		if m == nil {
			return nil
		}
		pl.items = append(pl.items, planTask{id: m[1], item: agent.PlanItem{Text: call.in.Subject, Status: agent.PlanPending}})
	case "TaskUpdate":
		i := pl.find(call.in.TaskID)
		if i < 0 {
			return nil
		}
		if call.in.Status == "deleted" {
			pl.items = append(pl.items[:i], pl.items[i+1:]...)
			break
		}
		if call.in.Status != "" {
			pl.items[i].item.Status = planStatus(call.in.Status)
		}
		if call.in.Subject != "" {
			pl.items[i].item.Text = call.in.Subject
		}
	}
	return pl.event(id)
}

func (pl *plan) find(taskID string) int {
	for i, t := range pl.items {
		if t.id == taskID && taskID != "" {
			return i
		}
	}
	return -1
}

// event is the whole current plan.
func (pl *plan) event(toolUseID string) []agent.Event {
	items := make([]agent.PlanItem, 0, len(pl.items))
	for _, t := range pl.items {
		items = append(items, t.item)
	}
	return []agent.Event{{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Items: items},
		Native: &agent.Native{Provider: ProviderID, Kind: "assistant/tool_use", ID: agent.JSONString(toolUseID)}}}
}

// planStatus maps a todo status; anything unknown is pending.
func planStatus(s string) agent.PlanStatus {
	switch s {
	case "in_progress":
		return agent.PlanInProgress
	case "completed":
		return agent.PlanCompleted
	}
	return agent.PlanPending
}
