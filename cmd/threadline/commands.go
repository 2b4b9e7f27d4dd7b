// Subcommands: chat, run, migrate.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatstore"
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
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f chatFlags
	f.register(fs)
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	cfg, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	iso, err := startHost(cfg, false, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	presses, ctx, stop := interrupts(ctx)
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
	con := &console.Console{Bot: a.bot, In: stdin, Out: stdout, Interrupts: presses, By: "console:" + userName(), Log: log}
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
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f chatFlags
	f.register(fs)
	events := fs.String("events", "", "print normalized events instead of text: jsonl")
	interactions := fs.String("interactions", "", "answer to approval requests: deny or accept (default: ask on a terminal, else deny)")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	if fs.NArg() != 1 {
		return &exitError{2, errors.New(`run takes exactly one prompt argument: threadline run --agent claude "prompt"`)}
	}
	if *events != "" && *events != "jsonl" {
		return &exitError{2, fmt.Errorf("--events %q: only jsonl is supported", *events)}
	}
	var approval agent.ApprovalPolicy
	// On a terminal, with no policy given, approvals are asked at the prompt.
	ask := *interactions == "" && isTerminal(stdin)
	switch *interactions {
	case "", "deny":
		*interactions = "deny"
		approval = agent.ApprovalDeny
	case "accept":
		approval = agent.ApprovalAccept
	default:
		return &exitError{2, fmt.Errorf("--interactions %q: use deny or accept", *interactions)}
	}
	cfg, err := loadConfig(f.config)
	if err != nil {
		return err
	}
	iso, err := startHost(cfg, false, stderr)
	if err != nil {
		return err
	}
	log := newLogger(stderr, slog.LevelWarn, cfg)
	presses, ctx, stop := interrupts(ctx)
	defer stop()
	a, err := openApp(ctx, cfg, log, approval, withIsolation(iso, ""))
	if err != nil {
		return err
	}
	defer a.Close()
	c, _, err := f.openChat(ctx, a)
	if err != nil {
		return err
	}
	if _, _, err := a.launch(c.Agent); err != nil && c.Project == "" {
		return err
	}
	fmt.Fprintf(stderr, "threadline: chat %s (continue with --chat %s)\n", c.ID, c.ID)
	seq, err := a.bot.LastSeq(ctx, c.ID)
	if err != nil {
		return err
	}
	subCtx, cancelSub := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelSub()
	feed := a.bot.Subscribe(subCtx, c.ID, seq)
	by := "cli:" + userName()
	run, err := a.bot.Send(ctx, chatops.Prompt{ChatID: c.ID, Text: fs.Arg(0), By: by, Interactive: ask})
	var lines <-chan string
	if ask {
		lines = readLines(ctx, stdin)
	}
	if err != nil {
		return err
	}
	var status string
	midLine := false
	asked := map[string]string{} // interaction id → what was asked
	for status == "" {
		select {
		case <-presses:
			a.bot.Stop(c.ID)
		case <-ctx.Done():
			a.bot.Stop(c.ID)
			<-run.Done()
			return ctx.Err()
		case ev, ok := <-feed:
			if !ok {
				return errors.New("event feed closed")
			}
			if ev.RunID != run.ID {
				continue
			}
			if *events == "jsonl" {
				line, err := eventLine(ev)
				if err != nil {
					return err
				}
				stdout.Write(line)
			}
			e, err := chatlog.DecodeAgent(ev.Type, ev.Payload)
			if err != nil {
				continue
			}
			switch e.Type {
			case agent.EventInteractionRequested:
				if e.Interaction != nil {
					asked[e.Interaction.ID] = interactionLabel(e.Interaction)
					if ask {
						if midLine {
							io.WriteString(stdout, "\n")
							midLine = false
						}
						fmt.Fprintln(stderr, console.Card(e.Interaction))
						fmt.Fprint(stderr, "> ")
						var line string
						select {
						case l, ok := <-lines:
							line = l
							if !ok {
								line = "n" // no more input: decline
							}
						case <-presses:
							line = "s" // Ctrl-C at the prompt stops the turn
						}
						if err := a.bot.Respond(ctx, c.ID, run.ID, console.Answer(e.Interaction, strings.TrimSpace(line), by)); err != nil {
							fmt.Fprintln(stderr, "threadline:", err)
						}
					}
				}
			case agent.EventInteractionResolved:
				if r := e.Resolution; r != nil {
					if midLine {
						io.WriteString(stdout, "\n")
						midLine = false
					}
					how := "--interactions " + *interactions
					if r.By != "policy" {
						how = "by " + r.By
					}
					fmt.Fprintf(stderr, "threadline: %s %s (%s)\n", r.Status, asked[r.InteractionID], how)
				}
			case agent.EventAssistantDelta:
				if *events == "" {
					io.WriteString(stdout, e.Text)
					midLine = e.Text != "" && e.Text[len(e.Text)-1] != '\n'
				}
			case agent.EventRunFailed:
				fmt.Fprintf(stderr, "threadline: run failed: %s\n", e.Text)
			case agent.EventRunInterrupted:
				fmt.Fprintln(stderr, "threadline: run interrupted")
			}
			if e.Type.Terminal() {
				status = string(e.Type)
			}
		}
	}
	if midLine {
		io.WriteString(stdout, "\n")
	}
	<-run.Done()
	switch run.Status() {
	case runhub.StatusCompleted:
		return nil
	case runhub.StatusInterrupted:
		return &exitError{130, errors.New("interrupted")}
	default:
		return &exitError{1, fmt.Errorf("run %s %s", run.ID, run.Status())}
	}
}

// eventLine renders a chat event as one flat JSON line: the event's own fields
// plus type, seq, chat_id and run_id.
func eventLine(ev chatops.Event) ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	t, _ := json.Marshal(ev.Type)
	b.Write(t)
	b.WriteString(`,"seq":` + strconv.FormatInt(ev.Seq, 10) + `,"chat_id":`)
	id, _ := json.Marshal(ev.ChatID)
	b.Write(id)
	b.WriteString(`,"run_id":`)
	rid, _ := json.Marshal(ev.RunID)
	b.Write(rid)
	b.WriteString(`,"at":`)
	at, _ := json.Marshal(ev.At)
	b.Write(at)
	var fields map[string]json.RawMessage
	if len(ev.Payload) > 0 {
		if err := json.Unmarshal(ev.Payload, &fields); err != nil {
			return nil, fmt.Errorf("event %d: %w", ev.Seq, err)
		}
	}
	keys := make([]string, 0, len(fields))
	for k := range fields {
		switch k {
		case "type", "seq", "chat_id", "run_id", "at":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		kb, _ := json.Marshal(k)
		b.WriteByte(',')
		b.Write(kb)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	config := fs.String("config", "", "config file")
	if err := fs.Parse(args); err != nil {
		return &exitError{2, err}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	st, err := store.OpenAndMigrate(ctx, cfg.Database.URL, newLogger(stderr, slog.LevelWarn, cfg))
	if err != nil {
		return err
	}
	defer st.Close()
	fmt.Fprintf(stdout, "threadline: %s database is up to date\n", st.Dialect())
	return nil
}

// interactionLabel names what an interaction asked, in a few words.
func interactionLabel(in *agent.Interaction) string {
	switch {
	case in.Command != "":
		return "`" + in.Command + "`"
	case in.Title != "":
		return in.Title
	}
	return string(in.Kind)
}

// readLines delivers r's lines until it ends or ctx does.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	out := make(chan string)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			select {
			case out <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}
