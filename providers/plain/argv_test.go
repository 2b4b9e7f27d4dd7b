// Tests that a model or effort that could read as a flag never reaches argv.

package plain

import (
	"errors"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	for _, cli := range CLIs {
		for _, req := range []agent.RunRequest{
			{Prompt: "P", Model: "--auto"}, {Prompt: "P", Model: "--yes-always"}, {Prompt: "P", Effort: "-y"}, {Prompt: "P", Model: "m\nx"},
		} {
			inv, err := Command(cli, req, DefaultArgvLimit, DefaultResumeFlag)
			if !errors.Is(err, agent.ErrInvalidArgValue) || inv.Args != nil {
				t.Errorf("%s %+v: args %q, err %v; want ErrInvalidArgValue and no args", cli, req, inv.Args, err)
			}
		}
		inv, err := Command(cli, agent.RunRequest{Prompt: "P", Model: "m-1"}, DefaultArgvLimit, DefaultResumeFlag)
		// Continue takes its model from its config: no model argument at all.
		if bound := slices.Contains(inv.Args, "--model=m-1"); err != nil || bound == (cli == Continue) || slices.Contains(inv.Args, "--model") {
			t.Errorf("%s: args %q, err %v; want --model=m-1 (none for continue)", cli, inv.Args, err)
		}
	}
}
