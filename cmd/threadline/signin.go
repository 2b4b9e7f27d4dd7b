// Sign-in check before the first prompt: chat and run say when the chat's
// agent cannot sign in, and how to fix it, instead of leaving it to the
// CLI's own error after the prompt.

package main

import (
	"fmt"
	"io"
	"os/user"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/procrun"
	"github.com/threadline-bot/threadline/agentcore/registry"
)

// warnSignIn writes to w, when the agent of a chat on this host (no
// project) cannot sign in by what detection sees, what is missing and the
// fix. It returns whether it warned. The run is not refused: a login the
// check cannot see (a keyring) may still work.
func (a *app) warnSignIn(agentID, project string, w io.Writer) bool {
	if project != "" {
		return false // the agent runs in the project's container
	}
	d, ok := a.agents.byID[agentID]
	if !ok {
		return false
	}
	msg := signInProblem(d, a.files.Iso)
	if msg == "" {
		return false
	}
	fmt.Fprintln(w, msg)
	return true
}

// signInProblem is the warning for d when its sign-in state is missing
// (registry.CheckAuth, under iso's home when isolation is on), else "".
func signInProblem(d registry.Definition, iso *procrun.Isolation) string {
	opts := registry.ProbeOptions{}
	if iso != nil {
		opts.Home = iso.Home
	}
	state, detail := registry.CheckAuth(d, opts)
	if state != registry.AuthMissing {
		return ""
	}
	return fmt.Sprintf("threadline: %s cannot sign in (%s).\nthreadline: fix: %s", d.ID, detail, signInFix(d, iso))
}

// signInFix says how to sign d in: export its first credential variable
// before starting threadline (or set it in agents.<id>.env), or sign the
// CLI in as the user the agent runs as.
func signInFix(d registry.Definition, iso *procrun.Isolation) string {
	var ways []string
	if len(d.Auth.Env) > 0 {
		ways = append(ways, fmt.Sprintf("export %s=… before starting threadline (or set it in agents.%s.env)", d.Auth.Env[0], d.ID))
	}
	who := "this user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		who = u.Username
	}
	if iso != nil {
		who = "the agent user " + iso.User + " (host.user)"
	}
	switch {
	case d.Auth.Login == "":
		ways = append(ways, "sign the CLI in as "+who)
	case iso != nil:
		ways = append(ways, fmt.Sprintf("run `%s` as %s: sudo -u %s -H %s", d.Auth.Login, who, iso.User, d.Auth.Login))
	default:
		ways = append(ways, fmt.Sprintf("run `%s` as %s", d.Auth.Login, who))
	}
	return strings.Join(ways, ", or ")
}
