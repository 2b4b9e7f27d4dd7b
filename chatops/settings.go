// settings.go: who may change a chat's agent, model, effort, mode and project
// in a thread, and which agents and projects a channel may use.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
)

// modeDisablesApprovals says which modes let the agent act without asking.
// Such a mode needs an admin. The modes a chat may set today (plan, default)
// keep every approval; a mode added here with true is admin-only at once.
var modeDisablesApprovals = map[agent.Mode]bool{agent.ModePlan: false, agent.ModeDefault: false}

// mayConfigure checks, before the command runs, that the user may change the
// setting and that the channel allows the value; a refusal is told to the
// user (ephemeral for permissions, in the thread for values) and returned as
// an error wrapping ErrForbidden. Nothing is changed then.
func (t *Desk) mayConfigure(ctx context.Context, m Message, cmd Command) error {
	if !t.policy.Allowed(m.User, m.Place, ActConfigure) {
		return t.refuse(ctx, m.Place, m.User, fmt.Sprintf("Only approvers may change this chat's %s; ask an approver or an admin.", cmd.Name))
	}
	rules := t.policy.Channel(m.Place)
	admin := t.policy.IsAdmin(m.User)
	var msg string
	switch cmd.Name {
	case "mode":
		if modeDisablesApprovals[agent.Mode(cmd.Arg)] && !admin {
			return t.refuse(ctx, m.Place, m.User, "Only an admin may choose a mode that runs tools without approvals.")
		}
	case "agent":
		if cmd.Arg != "" && len(rules.Agents) > 0 && !slices.Contains(rules.Agents, cmd.Arg) {
			msg = "This channel may use these agents: " + strings.Join(rules.Agents, ", ") + ". Nothing was changed."
		}
	case "project":
		if cmd.Arg != "" {
			msg = t.projectRefusal(ctx, m.Place, m.User, rules, cmd.Arg)
		}
	}
	if msg == "" {
		return nil
	}
	if err := t.notice(ctx, m.Place, msg); err != nil {
		t.log.WarnContext(ctx, "post refusal", "err", err)
	}
	return fmt.Errorf("%w: %s %s by %s at %s", ErrForbidden, cmd.Name, cmd.Arg, m.User.Qualified(), m.Place)
}

// projectRefusal says why a chat at p may not be bound to the project by u,
// or "" when it may: the channel's projects list, then the project's own
// channels and users (admins pass those), and its existence. The message
// names no other team's project.
func (t *Desk) projectRefusal(ctx context.Context, p Place, u User, rules Rules, name string) string {
	if agent.ValidArgValue(name) != nil {
		return "That is not a project name. Nothing was changed."
	}
	if len(rules.Projects) > 0 && !slices.Contains(rules.Projects, name) {
		return "This channel may use these projects: " + strings.Join(rules.Projects, ", ") + ". Nothing was changed."
	}
	if t.opts.Projects == nil {
		return ""
	}
	pa, err := t.opts.Projects.ProjectAccess(ctx, name)
	switch {
	case errors.Is(err, ErrNoProject):
		return fmt.Sprintf("There is no project %s. Nothing was changed.", name)
	case err != nil:
		t.log.ErrorContext(ctx, "read project access", logkey.Project, name, "err", err)
		return "I could not read the project's access list; nothing was changed."
	}
	if !t.policy.MayBind(u, p, pa) {
		return fmt.Sprintf("Project %s is not open to this channel or to you; an admin can open it with `threadline project access %s --channels ... --allow ...`. Nothing was changed.", name, name)
	}
	return ""
}

// mayAnswerRun reports whether u may answer requests of the run at p: an
// approver of the channel, and with requester_only the run's requester (or
// an admin).
func (t *Desk) mayAnswerRun(ctx context.Context, u User, p Place, runID agent.RunID) (ok bool, why string) {
	if !t.policy.Allowed(u, p, ActApprove) {
		return false, "You are not allowed to answer the agent's requests in this channel; ask an approver."
	}
	if !t.policy.Channel(p).RequesterOnly || t.policy.IsAdmin(u) {
		return true, ""
	}
	if t.opts.RunRequester != nil {
		by, err := t.opts.RunRequester(ctx, runID)
		if err == nil && by == u.Qualified() {
			return true, ""
		}
		if err != nil {
			t.log.WarnContext(ctx, "read run requester", logkey.RunID, runID, "err", err)
		}
	}
	return false, "In this channel only the person who started the run (or an admin) may answer its requests."
}
