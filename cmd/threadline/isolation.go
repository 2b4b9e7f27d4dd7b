// Isolation of host agents from the bot: the option that turns it on (the
// policy is configs.HostConfig's, the mechanism agentcore/execution's).

package main

import (
	"io"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/chatops"
)

var _ chatops.WorkFiles = (*app)(nil)

// withIsolation runs host agents under iso (nil: unchanged); workRoot is
// the parent of the chats' own working directories (<workRoot>/<chat id>),
// which are handed to the agent user.
func withIsolation(iso *procrun.Isolation, workRoot string) appOption {
	return func(o *appOptions) {
		o.isolation, o.workRoot = iso, workRoot
	}
}

// CreateWorkFile answers chatops.WorkFiles for the front desk.
func (a *app) CreateWorkFile(dir, name string) (io.WriteCloser, error) {
	return a.files.CreateWorkFile(dir, name)
}
