// Tests that a model or effort that could read as a flag never reaches argv.

package pi

import (
	"errors"
	"os"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TestRunRefusesFlagValues: pi takes "--model M" as two arguments (its parser
// has no --model=), so Run refuses a value that could read as a flag before
// the CLI starts: the fake never records an argv.
func TestRunRefusesFlagValues(t *testing.T) {
	for _, req := range []agent.RunRequest{
		{Prompt: "hi", Model: "--auto"},
		{Prompt: "hi", Effort: "--tools"},
		{Prompt: "hi", Model: "p/m\n--x"},
	} {
		h := newHarness(t)
		res := h.run(req, nil)
		if !errors.Is(res.Err, agent.ErrInvalidArgValue) || len(res.Events) != 0 {
			t.Errorf("Run(%+v) = %v, events %s; want ErrInvalidArgValue and no event", req, res.Err, res.Types())
		}
		if _, err := os.Stat(h.record); !os.IsNotExist(err) {
			t.Errorf("Run(%+v) started pi (stat: %v)", req, err)
		}
	}
}
