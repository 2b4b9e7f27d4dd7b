// commands.go: the one command table of every front-end (thread commands,
// Slack's /threadline, Matrix's !threadline, the console's /commands): each
// command's name, aliases, who may run it, its help and its handler; one
// parser and one dispatch; help generated from the table.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// Command is a parsed chat command.
type Command struct {
	// Name is the command's canonical name (an alias is resolved to it).
	Name string
	Arg  string
}

// Result is what a command produced for the user.
type Result struct {
	Text string
	// Chat is set when the command switched the front-end to another chat (new).
	Chat *Chat
	// File is posted in the thread after Text (the diff command); the
	// console prints it.
	File *PostFile
	// FollowUp is a prompt the console sends to the chat next (a merge's
	// conflict, for the agent to resolve); a thread sends it itself.
	FollowUp string
}

// PostFile is a file a command posts.
type PostFile struct {
	Name, Content string
}

// Who says who may run a command where a policy applies (chat platforms; the
// console's user is the operator).
type Who int

const (
	// WhoAllowed is anyone allowed to use the bot at the place.
	WhoAllowed Who = iota
	// WhoApprover is an approver of the place (Policy ActConfigure).
	WhoApprover
	// WhoAdmin is an admin.
	WhoAdmin
)

// chatNeed says what a command needs of the thread it is typed in.
type chatNeed int

const (
	// chatBind binds the thread to a chat first when it has none.
	chatBind chatNeed = iota
	// chatNone runs without a chat (help, agents).
	chatNone
	// chatExisting makes sense only where a chat exists (stop, status).
	chatExisting
)

// where is the front-end a command was typed in.
type where int

const (
	inConsole where = iota
	inThread
)

// CommandSpec is one row of the command table.
type CommandSpec struct {
	Name    string
	Aliases []string
	// Usage is the command as help shows it ("model <name>").
	Usage string
	Help  string
	Who   Who
	// Arg makes the bare-word form in a thread take exactly one argument
	// (else none); OptArg lets it take none or one. Values, when set, are the
	// only arguments it takes bare; argOK, when set, checks the argument of
	// the bare form.
	Arg    bool
	OptArg bool
	// rest makes the bare form's argument the rest of the line (pr's title).
	rest   bool
	Values []string
	argOK  func(string) bool
	need   chatNeed
	run    func(ctx context.Context, c *call) (Result, error)
}

// call is one command being run: the front-end, the chat, and for chat
// platforms the thread, its message and its binding.
type call struct {
	cmd    Command
	spec   *CommandSpec
	bot    *Chats
	where  where
	chatID agent.ChatID
	// Set in threads.
	t     *Desk
	th    *thread
	m     Message
	b     Binding
	fresh bool // the binding was made for this message
}

// commandTable is every command, in help order (set in init: help reads it).
var commandTable []*CommandSpec

func init() {
	commandTable = []*CommandSpec{
		{Name: "help", Aliases: []string{"commands"}, Usage: "help", Help: "show the commands", need: chatNone, run: runHelp},
		{Name: "agents", Usage: "agents", Help: "list the agents and whether they are installed", need: chatNone,
			run: func(ctx context.Context, c *call) (Result, error) { return Result{Text: c.bot.agentsTable(ctx)}, nil }},
		{Name: "status", Usage: "status", Help: "show this chat's agent, model, session and run", need: chatExisting, run: runStatus},
		{Name: "log", Usage: "log", Help: "this chat's whole log (prompts, answers, tool calls with their input and output), as a Markdown file", need: chatExisting, run: runLog},
		{Name: "stop", Usage: "stop", Help: "stop the running turn (and drop the queued messages)", need: chatExisting, run: runStop},
		{Name: "queue", Usage: "queue [clear]", Help: "list the messages waiting for the running turn, or drop them", OptArg: true, Values: []string{"clear"},
			need: chatExisting, run: runQueue},
		{Name: "now", Usage: "now [N]", Help: "stop the running turn and run queued message N (default: your latest) now", OptArg: true, argOK: isCount,
			need: chatExisting, run: runNowCommand},
		{Name: "new", Usage: "new", Help: "start a new chat (same settings)", run: runNew},
		{Name: "fork", Usage: "fork", Help: "continue this chat in a new chat (a new thread on chat platforms); this one is unchanged", run: runFork},
		{Name: "agent", Usage: "agent <id>", Help: "switch this chat's agent", Who: WhoApprover, Arg: true, run: runSetting},
		{Name: "model", Usage: "model <name>", Help: "set the model (empty: the agent's default)", Who: WhoApprover, Arg: true, run: runSetting},
		{Name: "effort", Usage: "effort <level>", Help: "set the reasoning effort", Who: WhoApprover, Arg: true, run: runSetting},
		{Name: "mode", Usage: "mode plan|default", Help: "plan only, or act", Who: WhoApprover, Arg: true, Values: []string{"plan", "default"}, run: runSetting},
		{Name: "project", Usage: "project <name>", Help: "run this chat in a project", Who: WhoApprover, Arg: true, run: runSetting},
	}
	commandTable = append(commandTable, shipCommands()...)
}

// lookupCommand finds a command by name or alias (case-insensitive).
func lookupCommand(name string) (*CommandSpec, bool) {
	name = strings.ToLower(name)
	for _, s := range commandTable {
		if s.Name == name || slices.Contains(s.Aliases, name) {
			return s, true
		}
	}
	return nil, false
}

// commandForm is a way a command is typed.
type commandForm int

const (
	// formPrefixed is "/name arg" or "!name arg" (the console).
	formPrefixed commandForm = iota
	// formThread is the prefixed form, or a bare command in its exact shape
	// (a thread message, the bot's mention removed).
	formThread
	// formSlash is the text after "/threadline": a command word and its
	// argument; empty is help.
	formSlash
)

// parseCommand is the one command parser; ok is false for a prompt.
func parseCommand(text string, form commandForm) (Command, bool) {
	t := strings.TrimSpace(text)
	if len(t) >= 2 && (t[0] == '/' || t[0] == '!') {
		name, arg, _ := strings.Cut(t[1:], " ")
		if s, ok := lookupCommand(name); ok {
			return Command{Name: s.Name, Arg: strings.TrimSpace(arg)}, true
		}
		if form != formSlash {
			return Command{}, false
		}
	}
	switch form {
	case formSlash:
		if t == "" {
			return Command{Name: "help"}, true
		}
		name, arg, _ := strings.Cut(t, " ")
		s, ok := lookupCommand(strings.TrimLeft(name, "/!"))
		if !ok {
			return Command{}, false
		}
		return Command{Name: s.Name, Arg: strings.TrimSpace(arg)}, true
	case formThread:
		fields := strings.Fields(t)
		if len(fields) == 0 {
			return Command{}, false
		}
		s, ok := lookupCommand(fields[0])
		if !ok {
			return Command{}, false
		}
		if s.rest && len(fields) > 2 {
			return Command{Name: s.Name, Arg: strings.TrimSpace(strings.TrimPrefix(t, fields[0]))}, true
		}
		if len(fields) > 2 {
			return Command{}, false
		}
		switch {
		case (s.Arg || s.OptArg) && len(fields) == 2:
			if len(s.Values) > 0 && !slices.Contains(s.Values, fields[1]) || s.argOK != nil && !s.argOK(fields[1]) {
				return Command{}, false
			}
			return Command{Name: s.Name, Arg: fields[1]}, true
		case !s.Arg && len(fields) == 1:
			return Command{Name: s.Name}, true
		}
	}
	return Command{}, false
}

// ParseCommand recognizes "/name arg" (or "!name arg"). ok is false for plain prompts.
func ParseCommand(text string) (Command, bool) { return parseCommand(text, formPrefixed) }

// ParseThreadCommand recognizes a command in a thread message (the bot's
// mention already removed). "/name arg" and "!name arg" always are commands. A
// bare word is one only in the exact form of a command, so that prose is a
// prompt: "stop", "status", "log", "new", "fork", "agents", "help" alone; "agent ID",
// "model M", "effort L", "mode plan|default", "project P" with one argument;
// "queue" or "queue clear", "now" or "now N".
// "help me fix this" is a prompt.
func ParseThreadCommand(text string) (Command, bool) { return parseCommand(text, formThread) }

// ParseSlashCommand parses the text of "/threadline <text>": a known command
// word with its argument, or (ok false) a prompt for a new chat.
func ParseSlashCommand(text string) (Command, bool) { return parseCommand(text, formSlash) }

// Execute runs a command against a chat, as the console does (no policy: the
// console's user is the operator).
func (b *Chats) Execute(ctx context.Context, chatID agent.ChatID, cmd Command) (Result, error) {
	return b.dispatch(ctx, &call{cmd: cmd, bot: b, where: inConsole, chatID: chatID})
}

// dispatch runs a parsed command through the table.
func (b *Chats) dispatch(ctx context.Context, c *call) (Result, error) {
	s, ok := lookupCommand(c.cmd.Name)
	if !ok {
		return Result{}, fmt.Errorf("chatops: unknown command %q", c.cmd.Name)
	}
	c.cmd.Name, c.spec = s.Name, s
	return s.run(ctx, c)
}

// told marks an error already told to the user in the thread.
type told struct{ error }

func (e told) Unwrap() error { return e.error }

// threadCommand runs a command typed in a bound thread: who may run it, the
// channel's rules for its value, then its handler; the result is posted in
// the thread.
func (t *Desk) threadCommand(ctx context.Context, th *thread, m Message, b Binding, fresh bool, cmd Command) error {
	s, ok := lookupCommand(cmd.Name)
	if !ok {
		return fmt.Errorf("chatops: unknown command %q", cmd.Name)
	}
	cmd.Name = s.Name
	switch s.Who {
	case WhoApprover:
		if err := t.mayConfigure(ctx, m, cmd); err != nil {
			return err
		}
	case WhoAdmin:
		if !t.policy.IsAdmin(m.User) {
			return t.refuse(ctx, m.Place, m.User, fmt.Sprintf("Only an admin may use %s.", s.Name))
		}
	}
	res, err := t.bot.dispatch(ctx, &call{cmd: cmd, bot: t.bot, where: inThread, chatID: b.ChatID, t: t, th: th, m: m, b: b, fresh: fresh})
	var already told
	switch {
	case errors.As(err, &already):
		return already.error
	case err != nil:
		return t.fail(ctx, m.Place, "The command failed", err)
	case res.Text == "" && res.File == nil:
		return nil
	}
	if res.Text != "" {
		if err := t.notice(ctx, m.Place, res.Text); err != nil {
			return err
		}
	}
	if res.File != nil {
		s, err := t.surface(m.Place.Platform)
		if err != nil {
			return err
		}
		if _, err := s.Upload(ctx, m.Place, res.File.Name, res.File.Content); err != nil {
			return t.fail(ctx, m.Place, "I could not post "+res.File.Name, err)
		}
	}
	return nil
}

// unboundReply answers a command in a thread without a chat, where the
// command needs none or makes no sense without one; ok is false when the
// thread should be bound and the command run.
func (t *Desk) unboundReply(ctx context.Context, cmd Command) (string, bool) {
	s, ok := lookupCommand(cmd.Name)
	if !ok {
		return "", false
	}
	switch s.need {
	case chatNone:
		res, err := s.run(ctx, &call{cmd: cmd, spec: s, bot: t.bot, where: inThread, t: t})
		if err != nil {
			return "The command failed: " + plainError(err), true
		}
		return res.Text, true
	case chatExisting:
		return "There is no chat in this thread yet.", true
	case chatBind:
	}
	return "", false
}

// slashReply answers "/threadline <command>" for a command other than new:
// those that need no chat run, the others point to a thread.
func (t *Desk) slashReply(ctx context.Context, cmd Command) string {
	s, ok := lookupCommand(cmd.Name)
	if !ok {
		return ""
	}
	switch s.need {
	case chatNone:
		res, err := s.run(ctx, &call{cmd: cmd, spec: s, bot: t.bot, where: inThread, t: t})
		if err != nil {
			return "The command failed: " + plainError(err)
		}
		return res.Text
	case chatExisting:
		return "Use `" + s.Name + "` in a chat's thread."
	}
	return "`" + s.Name + "` works in a chat's thread: mention me there with `" + s.Name + "`."
}

// runHelp generates the help text from the table.
func runHelp(_ context.Context, c *call) (Result, error) {
	var sb strings.Builder
	if c.where == inConsole {
		sb.WriteString("Commands:\n")
		for _, s := range commandTable {
			fmt.Fprintf(&sb, "  /%-18s %s\n", s.Usage, s.Help)
		}
		sb.WriteString("Anything else is sent to the agent.")
		return Result{Text: sb.String()}, nil
	}
	sb.WriteString("Mention me with a request and I pass it to the agent; replies in this thread continue the chat. Commands (mention me with one):\n")
	for _, s := range commandTable {
		fmt.Fprintf(&sb, "• `%s`: %s", s.Usage, s.Help)
		switch s.Who {
		case WhoApprover:
			sb.WriteString(" (approvers)")
		case WhoAdmin:
			sb.WriteString(" (admins)")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("The same work as `/threadline <command>`; `/threadline <request>` starts a new thread.")
	return Result{Text: sb.String()}, nil
}

func runStatus(ctx context.Context, c *call) (Result, error) {
	ch, err := c.bot.chats.GetChat(ctx, c.chatID)
	if err != nil {
		return Result{}, err
	}
	model := orDefault(ch.Model)
	if rm, ok := c.bot.chats.(ReportedModels); ok {
		if reported, err := rm.LastAgentModel(ctx, c.chatID); err == nil && reported != "" && reported != ch.Model {
			model += " (the agent reports " + reported + ")"
		}
	}
	s := fmt.Sprintf("chat %s · agent %s · model %s · mode %s · cwd %s", ch.ID, ch.Agent, model, ch.Mode, ch.Cwd)
	if r, ok := c.bot.Active(c.chatID); ok {
		s += " · running " + string(r.ID)
	} else {
		s += " · idle"
	}
	return Result{Text: s}, nil
}

// runStop stops the running turn and drops the thread's queue; with
// requester_only (no admin) only the turn's requester may stop it, and only
// their own queued messages are dropped.
func runStop(ctx context.Context, c *call) (Result, error) {
	dropped := 0
	if c.where == inThread {
		if ok, why := c.t.mayStopTurn(ctx, c.m.User, c.m.Place, c.chatID); !ok {
			return Result{}, told{c.t.refuse(ctx, c.m.Place, c.m.User, why)}
		}
		var err error
		if dropped, err = c.t.dropQueueFor(ctx, c.th, c.m); err != nil {
			return Result{}, err
		}
	}
	msg := "Nothing is running."
	if c.bot.Stop(c.chatID) {
		msg = "Stopping the running turn."
	}
	if dropped > 0 {
		msg += fmt.Sprintf(" Dropped %d queued message(s).", dropped)
	}
	return Result{Text: msg}, nil
}

// isCount reports whether s is a positive decimal count (a queue position).
func isCount(s string) bool {
	n, err := strconv.Atoi(s)
	return err == nil && n > 0 && strconv.Itoa(n) == s
}

// runQueue lists the thread's queue, or (queue clear) drops it.
func runQueue(ctx context.Context, c *call) (Result, error) {
	if c.where != inThread {
		return Result{Text: "The queue is a chat platform thread's: messages sent while a turn runs wait there."}, nil
	}
	switch c.cmd.Arg {
	case "":
		return Result{Text: c.t.queueText(c.th)}, nil
	case "clear":
		own := c.t.requesterOnly(c.m.User, c.m.Place)
		n, err := c.t.dropQueueFor(ctx, c.th, c.m)
		if err != nil {
			return Result{}, err
		}
		if n == 0 && own && c.th.othersQueued(c.m.User.Qualified()) {
			return Result{}, told{c.t.refuse(ctx, c.m.Place, c.m.User,
				"In this channel you may drop only your own queued messages, and you have none; an admin may drop everyone's.")}
		}
		if n == 0 {
			return Result{Text: "Nothing is queued in this thread."}, nil
		}
		if own && c.th.othersQueued(c.m.User.Qualified()) {
			return Result{Text: fmt.Sprintf("Dropped your %s; the others' stay queued (only an admin may drop them here). The running turn goes on.", plural(n, "queued message"))}, nil
		}
		return Result{Text: fmt.Sprintf("Dropped %s; the running turn goes on (`stop` stops it).", plural(n, "queued message"))}, nil
	}
	return Result{Text: "Usage: `queue` lists the waiting messages, `queue clear` drops them."}, nil
}

// runNowCommand stops the running turn and runs a queued message next.
func runNowCommand(ctx context.Context, c *call) (Result, error) {
	if c.where != inThread {
		return Result{Text: "now works in a chat platform's thread, on the messages queued there."}, nil
	}
	n := 0
	if c.cmd.Arg != "" {
		if !isCount(c.cmd.Arg) {
			return Result{Text: "Usage: `now` runs your latest queued message now, `now N` message N of `queue`."}, nil
		}
		n, _ = strconv.Atoi(c.cmd.Arg)
	}
	q, ok := c.th.queuedAt(n, c.m.User.Qualified())
	if !ok {
		if n > 0 {
			return Result{Text: fmt.Sprintf("There is no queued message %d (`queue` lists them).", n)}, nil
		}
		return Result{Text: "Nothing is queued in this thread."}, nil
	}
	if ok, why := c.t.mayRunNow(ctx, c.m.User, c.m.Place, c.chatID, q); !ok {
		return Result{}, told{c.t.refuse(ctx, c.m.Place, c.m.User, why)}
	}
	msg, err := c.t.runNow(ctx, c.th, c.chatID, q.ID)
	return Result{Text: msg}, err
}

func runNew(ctx context.Context, c *call) (Result, error) {
	if c.where == inThread {
		if c.fresh {
			return Result{Text: "This thread is a new chat: write your message."}, nil
		}
		return Result{}, told{c.t.branch(ctx, c.m, c.b, false)}
	}
	ch, err := c.bot.chats.GetChat(ctx, c.chatID)
	if err != nil {
		return Result{}, err
	}
	n, err := c.bot.NewChat(ctx, Chat{Agent: ch.Agent, Model: ch.Model, Effort: ch.Effort, Mode: ch.Mode, Project: ch.Project, Cwd: ch.Cwd})
	if err != nil {
		return Result{}, err
	}
	return Result{Text: "New chat " + string(n.ID) + ".", Chat: &n}, nil
}

func runFork(ctx context.Context, c *call) (Result, error) {
	if c.where == inThread {
		return Result{}, told{c.t.branch(ctx, c.m, c.b, true)}
	}
	n, err := c.bot.Fork(ctx, c.chatID)
	if err != nil {
		return Result{}, err
	}
	return Result{Text: fmt.Sprintf("Forked chat %s into a new chat %s (%s · %s); %s is unchanged.", c.chatID, n.ID, n.Agent, orDefault(n.Model), c.chatID), Chat: &n}, nil
}

// runSetting sets the chat's agent, model, effort, mode or project.
func runSetting(ctx context.Context, c *call) (Result, error) {
	b, cmd := c.bot, c.cmd
	ch, err := b.chats.GetChat(ctx, c.chatID)
	if err != nil {
		return Result{}, err
	}
	switch cmd.Name {
	case "agent":
		if cmd.Arg == "" {
			return Result{Text: "Usage: /agent <id> (see /agents)."}, nil
		}
		info, known := b.agentInfo(ctx, cmd.Arg)
		if err := agent.ValidArgValue(cmd.Arg); err != nil || b.agents != nil && !known {
			return Result{Text: "There is no such agent here. Valid agents: " + b.agentIDs(ctx) + "."}, nil
		}
		if _, ok := b.Active(c.chatID); ok {
			return Result{Text: "Stop the running turn before switching agents."}, nil
		}
		ch.Agent, ch.Model = cmd.Arg, ""
		if known && info.Args.CheckEffort(ch.Effort) != nil {
			ch.Effort = ""
		}
	case "model":
		if msg, ok := b.checkSetting(ctx, ch.Agent, "model", cmd.Arg); !ok {
			return Result{Text: msg}, nil
		}
		ch.Model = cmd.Arg
	case "effort":
		if msg, ok := b.checkSetting(ctx, ch.Agent, "effort", cmd.Arg); !ok {
			return Result{Text: msg}, nil
		}
		ch.Effort = cmd.Arg
	case "project":
		if cmd.Arg != "" && agent.ValidArgValue(cmd.Arg) != nil {
			return Result{Text: "That is not a valid project name; nothing was changed."}, nil
		}
		if _, ok := b.Active(c.chatID); ok {
			return Result{Text: "Stop the running turn before switching projects."}, nil
		}
		ch.Project = cmd.Arg
	case "mode":
		if !slices.Contains(c.spec.Values, cmd.Arg) {
			return Result{Text: "Usage: /mode plan|default."}, nil
		}
		ch.Mode = cmd.Arg
	}
	if err := b.chats.UpdateChat(ctx, ch); err != nil {
		return Result{}, err
	}
	return Result{Text: fmt.Sprintf("%s set to %s for this chat.", cmd.Name, orDefault(cmd.Arg))}, nil
}
