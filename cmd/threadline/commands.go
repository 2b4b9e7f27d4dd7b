// Subcommands: chat, run, migrate.

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/configs"
	"github.com/threadline-bot/threadline/store"
)

// chatFlags are the flags chat and run share.
type chatFlags struct {
	config, chat, agent, model, cwd, project string
}

func (f *chatFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.config, "config", "", "config file")
	fs.StringVar(&f.chat, "chat", "", "continue the chat with this id")
	fs.StringVar(&f.agent, "agent", "", "agent id (claude, ...)")
	fs.StringVar(&f.model, "model", "", "model")
	fs.StringVar(&f.cwd, "cwd", "", "working directory of a new chat (default: the current directory)")
	fs.StringVar(&f.project, "project", "", "run the chat in this project's container (see threadline project)")
}

// openChat loads the chat named by --chat (applying --agent/--model/--cwd to it)
// or creates one.
func (f *chatFlags) openChat(ctx context.Context, a *app) (chatops.Chat, bool, error) {
	cwd := f.cwd
	if cwd != "" || f.chat == "" {
		if cwd == "" {
			cwd = "."
		}
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return chatops.Chat{}, false, err
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return chatops.Chat{}, false, fmt.Errorf("--cwd %s is not a directory", cwd)
		}
		cwd = abs
	}
	if f.chat != "" {
		c, err := a.bot.Chat(ctx, f.chat)
		if errors.Is(err, store.ErrNotFound) {
			return c, false, fmt.Errorf("no chat %s in %s", f.chat, a.cfg.Database.URL)
		}
		if err != nil {
			return c, false, err
		}
		changed := false
		if f.agent != "" && f.agent != c.Agent {
			c.Agent, c.Model, changed = f.agent, "", true
		}
		if f.model != "" && f.model != c.Model {
			c.Model, changed = f.model, true
		}
		if cwd != "" && cwd != c.Cwd {
			c.Cwd, changed = cwd, true
		}
		if f.project != "" && f.project != c.Project {
			c.Project, changed = f.project, true
		}
		if changed {
			if err := (chatstore.Store{St: a.store}).UpdateChat(ctx, c); err != nil {
				return c, false, err
			}
		}
		return c, false, nil
	}
	id := f.agent
	if id == "" {
		var err error
		if id, err = a.defaultAgent(); err != nil {
			return chatops.Chat{}, false, err
		}
	}
	c, err := a.bot.NewChat(ctx, chatops.Chat{Agent: id, Model: f.model, Cwd: cwd, Project: f.project})
	return c, true, err
}

func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("chat", stdout, stderr, "threadline chat [--chat ID] [--agent ID] [--model M] [--cwd DIR] [--project P] [--config F]: a chat in this terminal")
	var f chatFlags
	f.register(fs)
	if _, err := parseExactly(fs, args); err != nil {
		return err
	}
	cfg, err := configs.Load(f.config)
	if err != nil {
		return err
	}
	iso, err := cfg.StartHost(false, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	presses, ctx, stop := console.Interrupts(ctx)
	defer stop()
	a, err := openApp(ctx, cfg, log, agent.ApprovalAsk, withIsolation(iso, ""))
	if err != nil {
		return err
	}
	defer a.Close()
	c, created, err := f.openChat(ctx, a)
	if err != nil {
		return err
	}
	if _, _, err := a.launch(c.Agent); err != nil && c.Project == "" {
		return err
	}
	a.warnSignIn(c.Agent, c.Project, stderr)
	verb := "continuing"
	if created {
		verb = "new"
	}
	fmt.Fprintf(stdout, "threadline: %s chat %s · %s · %s\n", verb, c.ID, agentLabel(c), c.Cwd)
	if !created {
		if err := console.Recap(ctx, a.bot, c.ID, stdout, 6); err != nil {
			log.WarnContext(ctx, "recap", "err", err)
		}
	}
	fmt.Fprintf(stdout, "Type a message. /help lists commands; Ctrl-C stops a turn; Ctrl-D quits. Reopen with --chat %s\n", c.ID)
	con := &console.Console{Bot: a.bot, In: stdin, Out: stdout, Interrupts: presses, By: "console:" + userName(), Log: log, Projects: a.store}
	return con.Run(ctx, c)
}

func agentLabel(c chatops.Chat) string {
	if c.Model != "" {
		return c.Agent + " · " + c.Model
	}
	return c.Agent
}

func userName() string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if v := os.Getenv(k); v != "" {
			return v
		}
	}
	return "local"
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
	if *fork && f.chat == "" {
		return &exitError{2, errors.New("--fork needs --chat ID: the chat to fork")}
	}
	var approval agent.ApprovalPolicy
	// On a terminal, with no policy given, approvals are asked at the prompt.
	ask := *interactions == "" && console.IsTerminal(stdin)
	switch *interactions {
	case "", "deny":
		*interactions = "deny"
		approval = agent.ApprovalDeny
	case "accept":
		approval = agent.ApprovalAccept
	default:
		return &exitError{2, fmt.Errorf("--interactions %q: use deny or accept", *interactions)}
	}
	cfg, err := configs.Load(f.config)
	if err != nil {
		return err
	}
	iso, err := cfg.StartHost(false, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	presses, ctx, stop := console.Interrupts(ctx)
	defer stop()
	a, err := openApp(ctx, cfg, log, approval, withIsolation(iso, ""))
	if err != nil {
		return err
	}
	defer a.Close()
	if *fork {
		n, err := a.bot.Fork(ctx, f.chat)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "threadline: forked chat %s into %s\n", f.chat, n.ID)
		f.chat = n.ID
	}
	c, _, err := f.openChat(ctx, a)
	if err != nil {
		return err
	}
	if _, _, err := a.launch(c.Agent); err != nil && c.Project == "" {
		return err
	}
	a.warnSignIn(c.Agent, c.Project, stderr)
	fmt.Fprintf(stderr, "threadline: chat %s (continue with --chat %s)\n", c.ID, c.ID)
	con := &console.OneShot{Bot: a.bot, In: stdin, Out: stdout, Err: stderr, Interrupts: presses,
		By: "cli:" + userName(), Ask: ask, Policy: *interactions, JSONL: *events == "jsonl"}
	run, err := con.Run(ctx, c.ID, pos[0])
	if err != nil {
		return err
	}
	switch run.Status() {
	case runhub.StatusCompleted:
		return nil
	case runhub.StatusInterrupted:
		return &exitError{130, errors.New("interrupted")}
	default:
		return &exitError{1, fmt.Errorf("run %s %s", run.ID, run.Status())}
	}
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
