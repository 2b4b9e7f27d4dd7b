// Subcommands: chat, run, migrate. The terminal front-end is bot/console's.

package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/configs"
)

// chatFlags are the flags chat and run share.
type chatFlags struct {
	config string
	console.Target
}

func (f *chatFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "config file")
	fs.StringVar((*string)(&f.ID), "chat", "", "continue the chat with this id (or a unique prefix of it, at least 4 characters)")
	fs.StringVar(&f.Agent, "agent", "", "agent id (claude, ...)")
	fs.StringVar(&f.Model, "model", "", "model")
	fs.StringVar(&f.Cwd, "cwd", "", "working directory of a new chat (default: the current directory)")
	fs.StringVar(&f.Project, "project", "", "run the chat in this project's container (see threadline project)")
}

// terminal is what chat and run open: the app with approval, Ctrl-C
// presses, and the chat (created: new) with its agent checked.
type terminal struct {
	*app
	presses <-chan struct{}
	chat    chatops.Chat
	created bool
}

// open loads the config, wires the app and opens the chat; fork first forks
// --chat into a new chat. done ends what open started.
func (f *chatFlags) open(ctx context.Context, approval agent.ApprovalPolicy, fork bool, stderr io.Writer) (_ context.Context, t terminal, done func(), err error) {
	cfg, err := configs.Load(f.config)
	if err != nil {
		return ctx, t, nil, err
	}
	host, err := cfg.StartHost(false, stderr)
	if err != nil {
		return ctx, t, nil, err
	}
	presses, ctx, stop := console.Interrupts(ctx)
	a, err := openApp(ctx, cfg, newLogger(stderr, slog.LevelWarn, cfg), approval, withIsolation(host, ""))
	if err != nil {
		stop()
		return ctx, t, nil, err
	}
	t, done = terminal{app: a, presses: presses}, func() { a.Close(); stop() }
	id, err := resolveChat(ctx, a.store, string(f.ID))
	if err != nil {
		done()
		return ctx, t, nil, err
	}
	f.ID = agent.ChatID(id)
	if fork {
		n, err := a.bot.Fork(ctx, f.ID)
		if err != nil {
			done()
			return ctx, t, nil, err
		}
		fmt.Fprintf(stderr, "threadline: forked chat %s into %s\n", f.ID, n.ID)
		f.ID = n.ID
	}
	o := console.Opener{Bot: a.bot, Updates: chatstore.Store{St: a.store}, DefaultAgent: a.chatDefaultAgent, Where: cfg.Database.URL}
	if t.chat, t.created, err = o.Open(ctx, f.Target); err == nil {
		if _, _, err = a.launch(t.chat.Agent); err != nil && t.chat.Project != "" {
			err = nil // the agent runs in the project's container
		}
	}
	if err != nil {
		done()
		return ctx, t, nil, err
	}
	if host.Isolated() {
		fmt.Fprintln(stderr, "threadline:", host.Describe())
	}
	if host.Iso != nil && t.chat.Project == "" && t.chat.Cwd != "" {
		if err := host.Iso.CanWrite(t.chat.Cwd); err != nil {
			fmt.Fprintf(stderr, "threadline: warning: the agent runs as %s, which cannot change files in %s (%v): chown or chmod it for that user, pick another --cwd, or run threadline as an ordinary user (the agent then runs as you, sandboxed)\n", host.Iso.User, t.chat.Cwd, err)
		}
	}
	a.warnSignIn(t.chat.Agent, t.chat.Project, stderr)
	return ctx, t, done, nil
}

// chatDefaultAgent is the agent of a new chat that names none; when no
// default agent is installed, the error has one line per missing agent CLI
// with its install command (the defaults first) and names the agents that
// can run here all the same.
func (a *app) chatDefaultAgent() (string, error) {
	id, err := a.defaultAgent()
	if err == nil {
		return id, nil
	}
	set := a.agentTable()
	var defaults, others []console.MissingAgent
	for _, d := range set.Defs {
		if _, _, lerr := set.Launch(d.ID); d.Base != "" || !errors.Is(lerr, agent.ErrNotInstalled) {
			continue
		}
		m := console.MissingAgent{ID: d.ID, Install: d.InstallHint, Bin: d.Bin}
		if slices.Contains(defaultAgents, d.ID) {
			defaults = append(defaults, m)
		} else {
			others = append(others, m)
		}
	}
	if len(defaults)+len(others) == 0 {
		return "", err
	}
	slices.SortStableFunc(defaults, func(x, y console.MissingAgent) int {
		return cmp.Compare(slices.Index(defaultAgents, x.ID), slices.Index(defaultAgents, y.ID))
	})
	slices.SortStableFunc(others, func(x, y console.MissingAgent) int { return strings.Compare(x.ID, y.ID) })
	return "", console.NoAgentError(defaults, others, set.Runnable())
}

func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", stdout, stderr, "threadline chat [--chat ID] [--agent ID] [--model M] [--cwd DIR] [--project P] [--config F]: a chat in this terminal")
	var f chatFlags
	f.register(fs)
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	ctx, t, done, err := f.open(ctx, agent.ApprovalAsk, false, stderr)
	if err != nil {
		return err
	}
	defer done()
	con := &console.Console{Bot: t.bot, In: stdin, Out: stdout, Interrupts: t.presses, By: "console:" + console.UserName(), Log: t.log, Projects: t.store, Scrub: t.redactor.String,
		Agents: t.agentTable(), Sessions: t.store}
	return con.Start(ctx, t.chat, t.created)
}

func cmdRun(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("run", stdout, stderr, `threadline run --agent ID [--model M] [--chat ID] [--cwd DIR] [--project P] [--interactions deny|accept]
               [--config F] [--events jsonl] "prompt": one run, its answer on stdout
Flags may come before or after the prompt; after "--" everything is the prompt.`)
	var f chatFlags
	f.register(fs)
	events := fs.String("events", "", "print normalized events instead of text: jsonl")
	interactions := fs.String("interactions", "", "answer to approval requests: deny or accept (default: ask on a terminal, else deny)")
	fork := fs.Bool("fork", false, "run in a new chat forked from --chat ID, which is not changed")
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return &exitError{2, fmt.Errorf(`run takes exactly one prompt argument, got %d (quote the prompt; put "--" before one that starts with "-"): threadline run --agent claude "prompt"`, len(pos))}
	}
	if *events != "" && *events != "jsonl" {
		return &exitError{2, fmt.Errorf("--events %q: only jsonl is supported", *events)}
	}
	if *fork && f.ID == "" {
		return &exitError{2, errors.New("--fork needs --chat ID: the chat to fork")}
	}
	approval, policy, ask, err := console.Policy(*interactions, stdin)
	if err != nil {
		return &exitError{2, err}
	}
	ctx, t, done, err := f.open(ctx, approval, *fork, stderr)
	if err != nil {
		return err
	}
	defer done()
	fmt.Fprintf(stderr, "threadline: chat %s (continue with --chat %s)\n", t.chat.ID, t.chat.ID)
	con := &console.OneShot{Bot: t.bot, In: stdin, Out: stdout, Err: stderr, Interrupts: t.presses,
		By: "cli:" + console.UserName(), Ask: ask, Policy: policy, JSONL: *events == "jsonl"}
	run, err := con.Run(ctx, t.chat.ID, pos[0])
	if err != nil {
		return err
	}
	if code, err := console.ExitCode(run); code != 0 {
		return &exitError{code, err}
	}
	return nil
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("migrate", stdout, stderr, "threadline migrate [--config F]: apply the database migrations")
	config := fs.String("config", "", "config file")
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	_, st, err := openStore(ctx, *config, stderr)
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stdout, "threadline: %s database is up to date\n", st.Dialect())
	return nil
}
