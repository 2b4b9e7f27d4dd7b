// Opening a chat from the command line (`threadline chat`, `threadline run`):
// the chat --chat names with the settings given applied, or a new one; the
// banner a terminal chat starts with; the approval policy of --interactions;
// the exit status a one-shot run ends with; and what a new chat says when no
// agent CLI is installed.

package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/prompt"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// Target is the chat a command opens: the chat ID (empty: a new chat) and
// the settings given; a setting left empty keeps the chat's own.
type Target struct {
	ID                         agent.ChatID
	Agent, Model, Cwd, Project string
}

// ChatUpdater saves a chat's settings (chatstore.Store).
type ChatUpdater interface {
	UpdateChat(ctx context.Context, c chatops.Chat) error
}

// Opener opens Targets.
type Opener struct {
	Bot *chatops.Chats
	// Updates saves a continued chat whose settings the target changes.
	Updates ChatUpdater
	// DefaultAgent is the agent of a new chat that names none.
	DefaultAgent func() (string, error)
	// Where names the store in "no chat ID in WHERE".
	Where string
}

// Open loads the chat t.ID names, with t's settings applied to it, or
// creates one with them (in the current directory unless t.Cwd); created
// says which. A given Cwd is made absolute and must be a directory.
func (o Opener) Open(ctx context.Context, t Target) (c chatops.Chat, created bool, err error) {
	if t.Cwd != "" || t.ID == "" {
		abs, err := filepath.Abs(cmp.Or(t.Cwd, "."))
		if err != nil {
			return c, false, err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return c, false, fmt.Errorf("--cwd %s is not a directory", cmp.Or(t.Cwd, "."))
		}
		t.Cwd = abs
	}
	if t.ID == "" {
		if t.Agent == "" {
			if t.Agent, err = o.DefaultAgent(); err != nil {
				return c, false, err
			}
		}
		c, err = o.Bot.NewChat(ctx, chatops.Chat{Agent: t.Agent, Model: t.Model, Cwd: t.Cwd, Project: t.Project})
		return c, true, err
	}
	c, err = o.Bot.Chat(ctx, t.ID)
	if errors.Is(err, store.ErrNotFound) {
		return c, false, fmt.Errorf("no chat %s in %s", t.ID, o.Where)
	}
	if err != nil {
		return c, false, err
	}
	changed := false
	if t.Agent != "" && t.Agent != c.Agent {
		c.Agent, c.Model, changed = t.Agent, "", true
	}
	for _, s := range []struct{ to, from *string }{{&c.Model, &t.Model}, {&c.Cwd, &t.Cwd}, {&c.Project, &t.Project}} {
		if *s.from != "" && *s.from != *s.to {
			*s.to, changed = *s.from, true
		}
	}
	if changed {
		err = o.Updates.UpdateChat(ctx, c)
	}
	return c, false, err
}

// Start prints the banner of a terminal chat (new or continued, its agent
// and directory; a continued chat's last turns), then runs it (Run).
func (c *Console) Start(ctx context.Context, chat chatops.Chat, created bool) error {
	verb := "continuing"
	if created {
		verb = "new"
	}
	label := chat.Agent
	if chat.Model != "" {
		label += " · " + chat.Model
	}
	fmt.Fprintf(c.Out, "threadline: %s chat %s · %s · %s\n", verb, chat.ID, label, chat.Cwd)
	if !created {
		if err := Recap(ctx, c.Bot, chat.ID, c.Out, 6); err != nil && c.Log != nil {
			c.Log.WarnContext(ctx, "recap", logkey.ChatID, chat.ID, "err", err)
		}
	}
	fmt.Fprintf(c.Out, "Type a message. /help lists commands; Ctrl-C stops a turn; Ctrl-D quits. Reopen with --chat %s\n", chat.ID)
	return c.Run(ctx, chat)
}

// UserName is the local user, for the By of the chat's events: $USER, else
// $LOGNAME, else "local".
func UserName() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "local"
}

// Policy is the approval policy of `run --interactions` (deny, accept, or
// "": ask on a terminal stdin, else deny): the service's policy, the name
// OneShot.Policy shows, and whether approvals are asked at the prompt; any
// other value is an error.
func Policy(interactions string, stdin io.Reader) (approval agent.ApprovalPolicy, name string, ask bool, err error) {
	switch interactions {
	case "":
		return agent.ApprovalDeny, "deny", IsTerminal(stdin), nil
	case "deny":
		return agent.ApprovalDeny, "deny", false, nil
	case "accept":
		return agent.ApprovalAccept, "accept", false, nil
	}
	return "", "", false, fmt.Errorf("--interactions %q: use deny or accept", interactions)
}

// ExitCode is the exit status of a one-shot run that ended: 0 completed,
// 130 interrupted, else 1, with the error to print.
func ExitCode(run *prompt.Run) (int, error) {
	switch run.Status() {
	case runhub.StatusCompleted:
		return 0, nil
	case runhub.StatusInterrupted:
		return 130, errors.New("interrupted")
	}
	return 1, fmt.Errorf("run %s %s", run.ID, run.Status())
}

// MissingAgent is an agent CLI that is not installed, with the command that
// installs it; Bin is the path the config gives it, when it gives one.
type MissingAgent struct {
	ID, Install, Bin string
}

// NoAgentError says that no agent a new chat could default to is installed:
// one line per missing CLI with its install command, the default agents
// (in the order they are tried) apart from the others; installed, when not
// empty, are the agents that can run here all the same (not among the
// defaults), which --agent picks.
func NoAgentError(defaults, others []MissingAgent, installed []string) error {
	var sb strings.Builder
	if len(installed) > 0 {
		fmt.Fprintf(&sb, "none of the default agents is installed (not found on PATH); %s can run here: pick one with --agent (or defaults.agent in the config), or install one of these.\n", strings.Join(installed, ", "))
	} else {
		sb.WriteString("no agent CLI is installed (not found on PATH). Install one of these, then run this again.\n")
	}
	tw := tabwriter.NewWriter(&sb, 0, 4, 2, ' ', 0)
	// The defaults one per line; the others, dozens, only counted: a first
	// screen is for the likely choices.
	if len(defaults) > 0 {
		fmt.Fprintln(tw, "The default agents, tried in this order:")
	}
	for _, m := range defaults {
		line := cmp.Or(m.Install, "(see `threadline agents --all`)")
		if m.Bin != "" {
			line += " (the config's bin " + m.Bin + " was not found)"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", m.ID, line)
	}
	_ = tw.Flush()
	if len(others) > 0 {
		fmt.Fprintf(&sb, "%d other agents are known: `threadline agents --all` lists each with its install command, path, version and sign-in.", len(others))
	} else {
		sb.WriteString("(`threadline agents --all` shows each agent's state: path, version, sign-in)")
	}
	return errors.New(sb.String())
}
