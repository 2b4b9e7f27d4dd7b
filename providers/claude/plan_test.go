package claude

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// plans returns the plan.updated events' plans as JSON.
func plans(evs []agent.Event) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type == agent.EventPlanUpdated {
			b, _ := json.Marshal(ev.Plan)
			out = append(out, string(b))
		}
	}
	return out
}

func TestPlanFromTodoWrite(t *testing.T) {
	p := NewParser("")
	evs := providertest.MustParse(t, p, `{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"tu1","name":"TodoWrite","input":{"todos":[`+
		`{"content":"Read","status":"completed","activeForm":"Reading"},{"content":"Fix","status":"in_progress","activeForm":"Fixing"},{"content":"Test","status":"pending","activeForm":"Testing"}]}}]}}`)
	if len(evs) != 2 || evs[0].Type != agent.EventToolStarted {
		t.Fatalf("events %+v (the tool event stays)", evs)
	}
	want := `{"items":[{"text":"Read","status":"completed"},{"text":"Fix","status":"in_progress"},{"text":"Test","status":"pending"}]}`
	if got := plans(evs); len(got) != 1 || got[0] != want {
		t.Errorf("plans %v", got)
	}
	// Each TodoWrite is the whole list.
	evs = providertest.MustParse(t, p, `{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"tu2","name":"TodoWrite","input":{"todos":[{"content":"Read","status":"completed"}]}}]}}`)
	if got := plans(evs); len(got) != 1 || got[0] != `{"items":[{"text":"Read","status":"completed"}]}` {
		t.Errorf("plans %v", got)
	}
}

func TestPlanFromTaskTools(t *testing.T) {
	p := NewParser("")
	use := func(id, name, input string) []agent.Event {
		return providertest.MustParse(t, p, `{"type":"assistant","message":{"id":"m-`+id+`","content":[{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":`+input+`}]}}`)
	}
	result := func(id, text string, isErr bool) []agent.Event {
		b, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isErr}}}})
		return providertest.MustParse(t, p, string(b))
	}
	var got []string
	steps := []func() []agent.Event{
		func() []agent.Event { return use("c1", "TaskCreate", `{"subject":"Read the code","description":"d"}`) },
		func() []agent.Event { return result("c1", "Task #1 created successfully: Read the code", false) },
		func() []agent.Event { return use("c2", "TaskCreate", `{"subject":"Write the fix","description":"d"}`) },
		func() []agent.Event { return result("c2", "Task #2 created successfully: Write the fix", false) },
		func() []agent.Event { return use("u1", "TaskUpdate", `{"taskId":"1","status":"in_progress"}`) },
		func() []agent.Event { return result("u1", "Updated task #1 status", false) },
		func() []agent.Event { return use("u2", "TaskUpdate", `{"taskId":"9","status":"completed"}`) },
		func() []agent.Event { return result("u2", "Task not found", true) },
		func() []agent.Event {
			return use("u3", "TaskUpdate", `{"taskId":"1","status":"completed","subject":"Read all the code"}`)
		},
		func() []agent.Event { return result("u3", "Updated task #1", false) },
		func() []agent.Event { return use("u4", "TaskUpdate", `{"taskId":"2","status":"deleted"}`) },
		func() []agent.Event { return result("u4", "Updated task #2 deleted", false) },
	}
	for _, step := range steps {
		got = append(got, plans(step())...)
	}
	want := []string{
		`{"items":[{"text":"Read the code","status":"pending"}]}`,
		`{"items":[{"text":"Read the code","status":"pending"},{"text":"Write the fix","status":"pending"}]}`,
		`{"items":[{"text":"Read the code","status":"in_progress"},{"text":"Write the fix","status":"pending"}]}`,
		`{"items":[{"text":"Read all the code","status":"completed"},{"text":"Write the fix","status":"pending"}]}`,
		`{"items":[{"text":"Read all the code","status":"completed"}]}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("plans\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestRespondApproveForSession: approve for the session allows with the
// CLI's own suggestions, every destination narrowed to the session; without
// suggestions it is a plain allow.
func TestRespondApproveForSession(t *testing.T) {
	req := `{"type":"control_request","request_id":"r1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"echo hi > out.txt"},` +
		`"permission_suggestions":[{"type":"addRules","rules":[{"toolName":"Bash","ruleContent":"echo hi *"}],"behavior":"allow","destination":"localSettings"},` +
		`{"type":"addDirectories","directories":["/w"],"destination":"session"}],"tool_use_id":"toolu_1"}}`
	p := NewParser("")
	evs := providertest.MustParse(t, p, req)
	if len(evs) != 1 || !evs[0].Interaction.Accepts(agent.DecisionApproveSession) || evs[0].Interaction.Options[1].ID != "approve_session" {
		t.Fatalf("interaction %+v", evs)
	}
	ev, err := p.Respond(agent.InteractionResponse{InteractionID: "r1", Decision: agent.DecisionApproveSession, By: "alice"})
	if err != nil || ev.Resolution.Status != agent.StatusApprovedForSession {
		t.Fatalf("Respond = %+v, %v", ev, err)
	}
	want := `{"type":"control_response","response":{"subtype":"success","request_id":"r1","response":{"behavior":"allow","updatedPermissions":[` +
		`{"behavior":"allow","destination":"session","rules":[{"toolName":"Bash","ruleContent":"echo hi *"}],"type":"addRules"},` +
		`{"destination":"session","directories":["/w"],"type":"addDirectories"}],"toolUseID":"toolu_1"}}}`
	if out := p.TakeOutgoing(); len(out) != 1 || string(out[0]) != want {
		t.Errorf("sent %s\nwant %s", out, want)
	}

	p = NewParser("")
	evs = providertest.MustParse(t, p, strings.Replace(req, `"permission_suggestions":[`, `"other":[`, 1))
	if len(evs) != 1 || len(evs[0].Interaction.Options) != 3 {
		t.Fatalf("without suggestions, options %+v", evs[0].Interaction.Options)
	}
	ev, err = p.Respond(agent.InteractionResponse{InteractionID: "r1", Decision: agent.DecisionApproveSession})
	if err != nil || ev.Resolution.Status != agent.StatusApproved {
		t.Fatalf("Respond = %+v, %v (a plain allow)", ev, err)
	}
	if out := p.TakeOutgoing(); len(out) != 1 || strings.Contains(string(out[0]), "updatedPermissions") {
		t.Errorf("sent %s", out)
	}
}

// TestRespondMultiSelect: a multi-select answer (one option a line) reaches
// the CLI as it takes it, the labels joined with ", "; others as typed.
func TestRespondMultiSelect(t *testing.T) {
	p := NewParser("")
	providertest.MustParse(t, p, `{"type":"control_request","request_id":"q1","request":{"subtype":"can_use_tool","tool_name":"AskUserQuestion","input":{"questions":[`+
		`{"question":"Which toppings?","header":"Pizza","multiSelect":true,"options":[{"label":"Ham"},{"label":"Olives"},{"label":"Basil"}]},`+
		`{"question":"Size?","header":"Size","multiSelect":false,"options":[{"label":"S"},{"label":"L"}]}]},"tool_use_id":"tu-q"}}`)
	if _, err := p.Respond(agent.InteractionResponse{InteractionID: "q1", Decision: agent.DecisionAnswer,
		Answers: map[string]string{"Which toppings?": "Ham\nBasil\n", "Size?": "XL, please"}}); err != nil {
		t.Fatal(err)
	}
	out := p.TakeOutgoing()
	if len(out) != 1 || !strings.Contains(string(out[0]), `"answers":{"Size?":"XL, please","Which toppings?":"Ham, Basil"}`) {
		t.Errorf("sent %s", out)
	}
}
