// End-to-end: the real Claude CLI takes the model bound to its flag
// (--model=M) and sends it to the API.

package claude_test

import (
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/providers/claude/fakeapi"
)

func TestE2EModelBoundToFlag(t *testing.T) {
	h := setupE2E(t, fakeapi.Text("ok"))
	if h == nil {
		return
	}
	const model = "claude-test-model-9"
	r := h.run(agent.RunRequest{Prompt: "which model", Model: model, Approval: agent.ApprovalDeny}, nil)
	if r.Err != nil || r.Last().Type != agent.EventRunCompleted {
		t.Fatalf("Run = %v, last %+v", r.Err, r.Last())
	}
	reqs := h.fake.MessageRequests()
	found := false
	for _, q := range reqs {
		if q.Body.Model == model {
			found = true
		}
	}
	if !found {
		t.Fatalf("no API request used --model=%s (%d requests)", model, len(reqs))
	}
}
