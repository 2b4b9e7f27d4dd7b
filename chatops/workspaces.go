// workspaces.go: the commands on a chat's own branch (diff, push, pr, merge,
// close) and the buttons under a turn's answer that run them. The work is
// the Workspaces' (agentcore/worktrees behind the wiring); chatops words
// the outcome and decides who may.

package chatops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Workspaces ships the work of chats that have a branch of their own.
// Every method returns an error wrapping ErrNoWorkspace for a chat without
// one, and errors in plain words otherwise.
type Workspaces interface {
	// Diff is the chat's whole branch against its base.
	Diff(ctx context.Context, chatID agent.ChatID) (BranchDiff, error)
	// Push commits what the agent left uncommitted (as the bot, for by),
	// checks the branch against the push gates and pushes it; it returns
	// the text to tell. A refusal is a *PushRefused.
	Push(ctx context.Context, chatID agent.ChatID, by Requester) (string, error)
	// PR pushes the branch and opens its pull request, or updates the one
	// it opened before (title: "" keeps the first prompt's); link is the
	// thread's, for the PR's body. It returns the text to tell.
	PR(ctx context.Context, chatID agent.ChatID, title string, by Requester, link string) (string, error)
	// Merge lands the branch on its base without touching any checkout; a
	// conflict is a *MergeConflict and lands nothing.
	Merge(ctx context.Context, chatID agent.ChatID, by Requester) (string, error)
	// Close removes the chat's workspace; unpushed work needs discard (the
	// error says what would be lost).
	Close(ctx context.Context, chatID agent.ChatID, discard bool) (string, error)
}

// Requester is the person a ship action is done for: their platform id and,
// where the front-end knows them, their name and email (for the commit's
// Co-authored-by or Requested-by trailer).
type Requester struct {
	User  User
	Name  string
	Email string
}

// BranchDiff is a chat's branch against its base.
type BranchDiff struct {
	Branch string
	// Stat is the stat line ("3 files changed, +40 −2").
	Stat  string
	Patch []byte
}

// ErrNoWorkspace is returned (wrapped) for a chat without a branch of its
// own: its directory is not a git repository, or worktrees are off there.
var ErrNoWorkspace = errors.New("this chat has no branch of its own (its directory is not a git repository, or the channel has worktrees off)")

// MergeConflict is the error of a merge whose branch conflicts with its
// base: nothing landed; the agent gets it as the thread's next turn.
type MergeConflict struct {
	Branch, Base string
	Files        []string
}

func (e *MergeConflict) Error() string {
	return fmt.Sprintf("%s conflicts with %s in %s; nothing was merged", e.Branch, e.Base, strings.Join(e.Files, ", "))
}

// Prompt is the turn that asks the agent to resolve the conflict.
func (e *MergeConflict) Prompt() string {
	return fmt.Sprintf("Merging this branch (%s) into %s conflicts in: %s. Rebase the branch onto %s (git fetch origin %s; git rebase origin/%s), "+
		"resolve the conflicts keeping both changes' intent, finish the rebase, and say what you did.",
		e.Branch, e.Base, strings.Join(e.Files, ", "), e.Base, e.Base, e.Base)
}

// shipCommands are the command table's rows for a chat's branch.
func shipCommands() []*CommandSpec {
	return []*CommandSpec{
		{Name: "diff", Usage: "diff", Help: "the whole diff of this chat's branch, as a file", need: chatExisting, run: runDiff},
		{Name: "push", Usage: "push", Help: "commit what the agent left and push this chat's branch (after the secret and size checks)", Who: WhoApprover, need: chatExisting, run: runShip},
		{Name: "pr", Usage: "pr [title]", Help: "push and open this branch's pull request, or update it", Who: WhoApprover, OptArg: true, rest: true, need: chatExisting, run: runShip},
		{Name: "merge", Usage: "merge", Help: "land this branch on its base (a conflict goes back to the agent)", Who: WhoApprover, need: chatExisting, run: runShip},
		{Name: "close", Usage: "close [--discard]", Help: "remove this chat's workspace (--discard: even with unpushed work)", Who: WhoApprover, OptArg: true, Values: []string{"--discard"}, need: chatExisting, run: runShip},
	}
}

// requester is who a command in c is done for.
func (c *call) requester(ctx context.Context) Requester {
	r := Requester{User: c.m.User}
	if c.where == inConsole {
		r.User = User{Platform: "console", ID: cmp.Or(os.Getenv("USER"), "operator")}
	}
	if c.t != nil {
		if s, err := c.t.surface(r.User.Platform); err == nil {
			if p, ok := s.(Profiler); ok {
				r.Name, r.Email, _ = p.Profile(ctx, r.User)
			}
		}
	}
	if r.Name == "" {
		r.Name = r.User.ID
	}
	return r
}

// Profiler is a Surface that knows a user's display name and email (Slack
// users.info). Optional.
type Profiler interface {
	Profile(ctx context.Context, u User) (name, email string, err error)
}

// runDiff posts the branch's stat and its diff as a file (the console
// prints both).
func runDiff(ctx context.Context, c *call) (Result, error) {
	if c.bot.Workspaces == nil {
		return Result{Text: "Workspaces are not set up here."}, nil
	}
	d, err := c.bot.Workspaces.Diff(ctx, c.chatID)
	if err != nil {
		return Result{}, err
	}
	text := fmt.Sprintf("`%s`: %s against its base.", d.Branch, d.Stat)
	if len(d.Patch) == 0 {
		return Result{Text: text + " Nothing to show."}, nil
	}
	name := strings.NewReplacer("/", "-", " ", "-").Replace(d.Branch) + ".diff"
	return Result{Text: text, File: &PostFile{Name: name, Content: string(d.Patch)}}, nil
}

// runShip runs push, pr, merge and close.
func runShip(ctx context.Context, c *call) (Result, error) {
	ws := c.bot.Workspaces
	if ws == nil {
		return Result{Text: "Workspaces are not set up here."}, nil
	}
	var (
		text string
		err  error
	)
	switch c.cmd.Name {
	case "push":
		text, err = ws.Push(ctx, c.chatID, c.requester(ctx))
	case "pr":
		text, err = ws.PR(ctx, c.chatID, c.cmd.Arg, c.requester(ctx), threadLink(c.m.Place))
	case "merge":
		text, err = ws.Merge(ctx, c.chatID, c.requester(ctx))
	case "close":
		text, err = ws.Close(ctx, c.chatID, c.cmd.Arg == "--discard")
	}
	var conflict *MergeConflict
	if errors.As(err, &conflict) {
		// The conflict goes back to the agent as the thread's next turn.
		msg := "Merging conflicts in " + strings.Join(conflict.Files, ", ") + ": nothing was merged. I am asking the agent to rebase and resolve them."
		if c.where == inThread {
			if serr := c.t.send(ctx, c.th, c.b, promptOrigin{id: c.m.ID, sent: c.m.Sent}, c.m, conflict.Prompt(), nil, nil); serr != nil {
				return Result{}, serr
			}
			return Result{Text: msg}, nil
		}
		return Result{Text: msg, FollowUp: conflict.Prompt()}, nil
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Text: text}, nil
}

// threadLink is a link to the thread at p for a PR's body ("" where the
// platform has none).
func threadLink(p Place) string {
	switch p.Platform {
	case "slack":
		if p.Channel != "" && p.Thread != "" {
			return "https://slack.com/archives/" + p.Channel + "/p" + strings.ReplaceAll(p.Thread, ".", "")
		}
	case "matrix":
		if p.Channel != "" && p.Thread != "" {
			return "https://matrix.to/#/" + p.Channel + "/" + p.Thread
		}
	}
	return ""
}

// clickShip runs the command a ship button under an answer stands for, as
// if it was typed in the thread by the clicker.
func (t *Desk) clickShip(ctx context.Context, th *thread, c Click) error {
	name := strings.TrimPrefix(c.Button, ButtonShipPrefix)
	s, ok := lookupCommand(name)
	if !ok || s.run == nil {
		return fmt.Errorf("chatops: unknown ship button %q", c.Button)
	}
	b, ok, err := t.binding(ctx, th)
	if err != nil || !ok || b.ChatID != c.Ref.ChatID {
		return t.refuse(ctx, c.Place, c.User, "That button belongs to another chat.")
	}
	m := Message{Place: c.Place, User: c.User, Text: name}
	return t.threadCommand(ctx, th, m, b, false, Command{Name: s.Name})
}

// TellChat posts text in every thread bound to the chat (a workspace's
// removal by the idle sweep, say); a chat of no thread is told nothing.
func (t *Desk) TellChat(ctx context.Context, chatID agent.ChatID, text string) error {
	bs, err := t.store.BindingsOfChat(ctx, chatID)
	if err != nil {
		return err
	}
	var errs []error
	for _, b := range bs {
		if _, err := t.surface(b.Place.Platform); err != nil {
			continue // a platform this process does not serve
		}
		errs = append(errs, t.notice(ctx, b.Place, text))
	}
	return errors.Join(errs...)
}
