// Sign-in check before the first prompt: chat and run say when the chat's
// agent cannot sign in, and how to fix it (configs/doctor), instead of
// leaving it to the CLI's own error after the prompt.

package main

import (
	"fmt"
	"io"

	"github.com/threadline-bot/threadline/configs/doctor"
)

// warnSignIn writes to w, when the agent of a chat on this host (no
// project) cannot sign in by what detection sees, what is missing and the
// fix. It returns whether it warned. The run is not refused: a login the
// check cannot see (a keyring) may still work.
func (a *app) warnSignIn(agentID, project string, w io.Writer) bool {
	if project != "" {
		return false // the agent runs in the project's container
	}
	d, ok := a.agents.ByID[agentID]
	if !ok {
		return false
	}
	msg := doctor.SignInProblem(d, a.files.Iso)
	if msg == "" {
		return false
	}
	fmt.Fprintln(w, msg)
	return true
}
