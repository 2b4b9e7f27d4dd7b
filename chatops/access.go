// access.go: who may run the agent and who may answer its requests, per
// platform, workspace and channel. Default deny: where no allow-list applies,
// only admins may do anything.

package chatops

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/threadline-bot/threadline/agentcore/registry"
)

// User is a person on a platform.
type User struct {
	Platform string
	// ID is the platform's id of the user ("U0123ABC", "@alice:example.org").
	ID string
}

// Qualified is the user's platform-qualified id ("slack:U0123ABC"), the form
// used in events (By) and in the admins list.
func (u User) Qualified() string { return u.Platform + ":" + u.ID }

// ParseUser reverses Qualified. A string without a platform prefix gives a User
// with an empty Platform.
func ParseUser(q string) User {
	p, id, ok := strings.Cut(q, ":")
	if !ok || strings.HasPrefix(q, "@") {
		return User{ID: q}
	}
	return User{Platform: p, ID: id}
}

// Scope selects where Rules apply. An empty Workspace matches every workspace of
// the platform; an empty Channel makes the rules workspace-wide.
type Scope struct {
	Platform  string
	Workspace string
	Channel   string
}

// Defaults are the settings of a chat created in a channel.
type Defaults struct {
	Agent   string
	Model   string
	Project string
	// Workdir is the working directory of the channel's chats; empty gives
	// every chat its own directory under the bot's workdir.
	Workdir string
	// InteractionTimeout declines approvals nobody answered in time (recorded
	// as timed_out); zero waits for an answer.
	InteractionTimeout time.Duration
	// Skills are applied to every prompt of the channel, in the way the
	// agent takes skills.
	Skills []registry.Skill
}

// Rules are the settings of a channel or workspace.
type Rules struct {
	Defaults
	// Allow lists the platform user ids who may start runs and use commands;
	// "*" allows everyone in the scope.
	Allow []string
	// Approvers lists the platform user ids who may answer the agent's
	// requests; "*" allows everyone who may run.
	Approvers []string
	// ReplyWithoutMention makes every reply in a bound thread a prompt, not
	// only the ones that mention the bot.
	ReplyWithoutMention bool
	// Agents, when set, are the only agents chats of the scope may use
	// (`agent X` is refused for others); Projects likewise for projects.
	Agents   []string
	Projects []string
	// RequesterOnly lets only a run's requester (and admins) answer its
	// requests, instead of every approver.
	RequesterOnly bool
	// ThreadContext "off" keeps a thread's messages from the agent (the
	// earlier ones a chat starts with, those said meanwhile); "on" or ""
	// (the default) gives them. The most specific scope that sets it wins.
	ThreadContext string
}

// Policy is the access configuration of every platform.
type Policy struct {
	// Admins are platform-qualified user ids ("slack:U0123ABC") who may run
	// and approve everywhere.
	Admins []string
	// Rules holds channel and workspace rules.
	Rules map[Scope]Rules

	// live, once Replace was called, holds the admins and rules in force.
	live atomic.Pointer[Policy]
}

// Replace puts next's admins and rules in force at once (a config reload),
// safe while other goroutines check access: each check sees either the old
// policy or the new one, never a mix. Set builds a policy before it is in
// use; after Replace, change it only with another Replace. next must not be
// changed afterwards.
func (p *Policy) Replace(next *Policy) {
	p.live.Store(&Policy{Admins: next.Admins, Rules: next.Rules})
}

// current is the policy in force: the last Replace's, else p itself.
func (p *Policy) current() *Policy {
	if l := p.live.Load(); l != nil {
		return l
	}
	return p
}

// Set adds or replaces the rules of a scope.
func (p *Policy) Set(s Scope, r Rules) {
	if p.Rules == nil {
		p.Rules = map[Scope]Rules{}
	}
	p.Rules[s] = r
}

// Action is what a user asks to do.
type Action int

// Actions checked by Allowed.
const (
	// ActRun covers prompts and commands.
	ActRun Action = iota
	// ActApprove covers answering interactions.
	ActApprove
	// ActConfigure covers changing a chat's agent, model, effort, mode or
	// project: approvers (and admins) only.
	ActConfigure
)

// IsAdmin reports whether u is an admin.
func (p *Policy) IsAdmin(u User) bool {
	return slices.Contains(p.current().Admins, u.Qualified())
}

// lookup returns the rules of the channel and of its workspace, most specific
// first; a scope with a workspace wins over the same scope for any workspace.
func (p *Policy) lookup(pl Place) []Rules {
	p = p.current()
	var out []Rules
	seen := map[Scope]bool{}
	for _, s := range []Scope{
		{pl.Platform, pl.Workspace, pl.Channel},
		{pl.Platform, "", pl.Channel},
		{pl.Platform, pl.Workspace, ""},
		{pl.Platform, "", ""},
	} {
		if seen[s] {
			continue
		}
		seen[s] = true
		if r, ok := p.Rules[s]; ok {
			out = append(out, r)
		}
	}
	return out
}

// Channel returns the effective rules of a place: the channel's defaults over
// the workspace's, and the allow and approver lists of both. The most specific
// Agents and Projects lists win; RequesterOnly holds when any scope sets it.
func (p *Policy) Channel(pl Place) Rules {
	var eff Rules
	rules := p.lookup(pl)
	for i := len(rules) - 1; i >= 0; i-- { // least specific first, overridden after
		r := rules[i]
		if r.Agent != "" {
			eff.Agent = r.Agent
		}
		if r.Model != "" {
			eff.Model = r.Model
		}
		if r.Project != "" {
			eff.Project = r.Project
		}
		if r.Workdir != "" {
			eff.Workdir = r.Workdir
		}
		if r.InteractionTimeout != 0 {
			eff.InteractionTimeout = r.InteractionTimeout
		}
		eff.Skills = append(eff.Skills, r.Skills...)
		eff.ReplyWithoutMention = r.ReplyWithoutMention
		if r.ThreadContext != "" {
			eff.ThreadContext = r.ThreadContext
		}
		if len(r.Agents) > 0 {
			eff.Agents = r.Agents
		}
		if len(r.Projects) > 0 {
			eff.Projects = r.Projects
		}
		// A restriction of any scope holds: a channel cannot lift its
		// workspace's requester_only.
		eff.RequesterOnly = eff.RequesterOnly || r.RequesterOnly
		eff.Allow = append(eff.Allow, r.Allow...)
		eff.Approvers = append(eff.Approvers, r.Approvers...)
	}
	return eff
}

// Allowed reports whether u may do act at the place. Admins may do anything;
// otherwise running needs the user in an allow list of the channel or its
// workspace, and approving needs the user in an approver list (and, for "*",
// allowed to run). With no list, nobody but admins may.
func (p *Policy) Allowed(u User, pl Place, act Action) bool {
	if u.ID == "" || u.Platform != pl.Platform {
		return false
	}
	p = p.current() // one policy for the whole check
	if p.IsAdmin(u) {
		return true
	}
	r := p.Channel(pl)
	mayRun := slices.Contains(r.Allow, u.ID) || slices.Contains(r.Allow, "*")
	switch act {
	case ActRun:
		return mayRun
	case ActApprove, ActConfigure:
		if slices.Contains(r.Approvers, u.ID) {
			return true
		}
		return slices.Contains(r.Approvers, "*") && mayRun
	}
	return false
}

// ProjectAccess is who may bind chats to a project: chats of the listed
// channels, by the listed users. It is closed by default: a project with no
// Channels can be bound by admins only (projects made before access lists
// existed, and those added without --channels, stay closed until an admin
// names their channels). An empty Allow does not restrict the users of the
// listed channels beyond the channel's own rules.
type ProjectAccess struct {
	Name string
	// Channels are channel or room ids ("C0123ABC", "!room:example.org"),
	// optionally platform-qualified ("slack:C0123ABC"); "*" is every channel.
	Channels []string
	// Allow are user ids ("U0123ABC", "@alice:example.org"), optionally
	// platform-qualified ("slack:U0123ABC").
	Allow []string
}

// Projects looks up a project's access list. A project that does not exist
// is an error wrapping ErrNoProject.
type Projects interface {
	ProjectAccess(ctx context.Context, name string) (ProjectAccess, error)
}

// ErrNoProject is returned by Projects for a name no project has; the user is
// told there is no such project for the channel.
var ErrNoProject = errors.New("no such project")

// MayBind reports whether u may bind a chat at pl to the project: admins
// always; others only when the channel is in the project's Channels (none
// listed: nobody but admins) and the user in its Allow list when it is set.
func (p *Policy) MayBind(u User, pl Place, pa ProjectAccess) bool {
	if p.IsAdmin(u) {
		return true
	}
	if !slices.Contains(pa.Channels, "*") && !slices.Contains(pa.Channels, pl.Channel) && !slices.Contains(pa.Channels, pl.Platform+":"+pl.Channel) {
		return false
	}
	if len(pa.Allow) > 0 && (u.ID == "" || !slices.Contains(pa.Allow, u.ID) && !slices.Contains(pa.Allow, u.Qualified())) {
		return false
	}
	return true
}
