// Tests that a model or effort that could read as a flag never reaches argv.

package jsonstream

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TestCommandRefusesFlagValues: "--auto" as a model (opencode would read it
// as auto-approve after "-m") or as an effort is refused by every dialect, and
// a valid value is one argument bound to its flag.
func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	for _, d := range Dialects {
		for _, req := range []agent.RunRequest{
			{Model: "--auto"}, {Model: "-m"}, {Effort: "--auto"}, {Model: "a b"}, {Model: "x\x00y"}, {Mode: "yolo"},
		} {
			args, err := Command(d, req, DefaultArgvLimit)
			if !errors.Is(err, agent.ErrInvalidArgValue) || args != nil {
				t.Errorf("%s %+v: args %q, err %v; want ErrInvalidArgValue and no args", d, req, args, err)
			}
		}
		args, err := Command(d, agent.RunRequest{Model: "provider/model-1"}, DefaultArgvLimit)
		if err != nil || !slices.Contains(args, "--model=provider/model-1") {
			t.Errorf("%s: args %q, err %v; want --model=provider/model-1", d, args, err)
		}
		for _, a := range args {
			if a == "-m" || a == "--model" || a == "--variant" {
				t.Errorf("%s: bare flag %q in %q", d, a, args)
			}
		}
	}
	args, err := Command(OpenCode, agent.RunRequest{Effort: "high"}, DefaultArgvLimit)
	if err != nil || !slices.Contains(args, "--variant=high") || strings.Contains(strings.Join(args, " "), "--auto") {
		t.Errorf("opencode effort: %q %v", args, err)
	}
}
