// Tests that a model that could read as a flag never reaches argv.

package kimi

import (
	"errors"
	"slices"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

func TestCommandRefusesFlagValues(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"--auto", "--yolo", "-p", "k 2", "k\tx"} {
		inv, err := Command(agent.RunRequest{Prompt: "p", Model: m}, DefaultArgvLimit)
		if !errors.Is(err, agent.ErrInvalidArgValue) || inv.Args != nil {
			t.Errorf("model %q: args %q, err %v; want ErrInvalidArgValue and no args", m, inv.Args, err)
		}
	}
	inv, err := Command(agent.RunRequest{Prompt: "p", Model: "kimi-k2.5"}, DefaultArgvLimit)
	if err != nil || !slices.Contains(inv.Args, "--model=kimi-k2.5") || slices.Contains(inv.Args, "--model") {
		t.Errorf("args %q, err %v", inv.Args, err)
	}
}
