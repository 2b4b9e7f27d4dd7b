// Package console is the terminal front-end: one chat in a terminal, built on
// chatops like the Slack and Matrix front-ends. Text streams as it arrives, tool
// calls show as short lines, Ctrl-C stops the running turn (twice when idle quits),
// and approvals are answered at the prompt.
//
// On a terminal the input line is edited with github.com/chzyer/readline
// (arrow keys, Home/End, Ctrl-A/E/K/W, history with up/down and Ctrl-R, kept
// per user in HistoryFile), and a spinner with the time elapsed stands between Enter
// and the answer's first token. A message typed while a turn runs is queued
// and sent when the turn ends. From a pipe, lines are read one at a time, each
// once the previous turn has ended (or an approval waits for an answer), so
// the end of the input waits for the running turn.
//
// A line that starts with / is a command (/help lists them); an unknown
// command is refused, not sent. A message that starts with / is typed with
// two: "//etc is empty" sends "/etc is empty".
package console

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/store"
)

// ProjectLister lists the projects a chat may be bound to (*store.Store).
type ProjectLister interface {
	ListProjects(ctx context.Context) ([]store.Project, error)
}

// Console is a terminal chat.
type Console struct {
	Bot *chatops.Chats
	In  io.Reader
	Out io.Writer
	// Interrupts delivers Ctrl-C presses (SIGINT). At the line editor Ctrl-C
	// is read as a key and does the same.
	Interrupts <-chan struct{}
	// By names the user in the chat's events.
	By  string
	Log *slog.Logger
	// Projects, when set, are the only names /project accepts.
	Projects ProjectLister
	// History is the file the line editor keeps typed lines in: empty is
	// HistoryFile(), "-" keeps none.
	History string
	// Scrub, when set, masks secret values in a line before the history
	// keeps it (the config's redactor: a token pasted into the chat does
	// not land in the history file).
	Scrub func(string) string
	// Agents, when set, is the agent registry's detection: /agent takes only
	// an agent it reports ready, /model only a model the agent lists when it
	// lists its models.
	Agents AgentCatalog
	// Sessions, when set, reads the agents' native sessions /status shows.
	Sessions ChatSessions
}

// queued is a line typed while a turn ran, to run when it is over; echo
// shows it as it runs (it was typed before the turn's end was shown).
type queued struct {
	text string
	echo bool
}

// pendingInteraction is an interaction waiting for the console's answer;
// a form's answers are collected one question at a time.
type pendingInteraction struct {
	runID   agent.RunID
	in      *agent.Interaction
	answers map[string]string
}

// immediate commands run at once while a turn runs; the others wait in the
// queue with the messages, in the order typed.
var immediate = []string{"stop", "status", "help", "agents", "queue"}

// session is one Run of the console.
type session struct {
	*Console
	chat chatops.Chat
	r    *renderer
	ed   *editor    // nil when the input is not a terminal
	tty  *ttyWriter // nil when the output is not a terminal

	events  <-chan chatops.Event
	stopSub func()

	runID agent.RunID
	// done is closed when the running turn's run has ended (after its
	// terminal event); the next turn starts then.
	done <-chan struct{}
	// ended: the run's terminal event was shown; doneSeen: done was closed;
	// the turn is over with both (or a while after done alone: grace).
	ended, doneSeen bool
	grace           <-chan time.Time
	pending         []pendingInteraction
	queue           []queued
	eof             bool
	lastInterrupt   time.Time

	// waitingSince is when the running turn was sent, until its first
	// visible event (the spinner runs meanwhile).
	waitingSince time.Time
	spin         *time.Ticker
	frame        int
}

// Run runs the chat until the input ends (after the running turn and the
// queued messages) or the user quits.
func (c *Console) Run(ctx context.Context, chat chatops.Chat) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &session{Console: c, chat: chat, spin: time.NewTicker(time.Hour)}
	s.spin.Stop()
	defer s.spin.Stop()

	out := c.Out
	var lines <-chan input
	inF, _ := c.In.(*os.File)
	outF, _ := c.Out.(*os.File)
	outTTY := outF != nil && IsTerminal(outF)
	width := func() int { return termWidth(outF) }
	if inF != nil && outTTY && IsTerminal(inF) {
		hist, err := c.historyFile()
		if err != nil {
			return err
		}
		if s.ed, err = newEditor(inF, outF, hist, func() { s.tty.newLine() }); err != nil {
			return err
		}
		defer func() { cancel(); s.ed.close() }()
		s.tty = newTTYWriter(s.ed.writer(), width)
		lines = s.ed.lines(ctx)
	} else {
		if outTTY {
			s.tty = newTTYWriter(outF, width)
		}
		lines = pipeLines(ctx, c.In)
	}
	if s.tty != nil {
		out = s.tty
	}
	s.r = newRenderer(out)

	var err error
	if s.events, s.stopSub, err = c.follow(ctx, chat.ID); err != nil {
		return err
	}
	defer func() { s.stopSub() }()
	s.prompt()
	for {
		if s.eof && s.runID == "" && len(s.queue) == 0 {
			s.r.line("")
			return nil
		}
		in := lines
		if s.ed == nil && !s.ready() {
			in = nil // a pipe's next line waits for the turn
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-s.events:
			if !ok {
				return errors.New("the chat's event feed ended")
			}
			s.event(ev)
			if s.ended && s.doneSeen {
				if err := s.turnOver(ctx); err != nil {
					return err
				}
			}
		case <-s.done:
			s.done, s.doneSeen = nil, true
			if !s.ended {
				s.grace = time.After(2 * time.Second)
				continue
			}
			if err := s.turnOver(ctx); err != nil {
				return err
			}
		case <-s.grace:
			if err := s.turnOver(ctx); err != nil {
				return err
			}
		case <-c.Interrupts:
			if s.interrupt() {
				return nil
			}
		case <-s.spin.C:
			s.spinner()
		case l, ok := <-in:
			if !ok {
				lines = nil
				s.endOfInput(ctx)
				continue
			}
			quit, err := s.input(ctx, l)
			if s.ed != nil {
				s.ed.done()
			}
			if quit || err != nil {
				return err
			}
		}
	}
}

// input handles a typed line or a Ctrl-C at the editor; quit reports that
// the user quit.
func (s *session) input(ctx context.Context, l input) (quit bool, err error) {
	if l.interrupt {
		return s.interrupt(), nil
	}
	return false, s.typed(ctx, l.text)
}

func (c *Console) historyFile() (string, error) {
	switch c.History {
	case "-":
		return "", nil
	case "":
		return HistoryFile()
	}
	return c.History, nil
}

// ready reports whether a line typed now is taken at once: no turn runs, or
// one waits for an answer.
func (s *session) ready() bool { return !s.busy() || len(s.pending) > 0 }

// busy reports whether a turn runs and its end was not shown yet. After its
// end is shown the run still has to be done (its process to exit) before
// the next turn starts: a line typed meanwhile waits for that, unannounced.
func (s *session) busy() bool { return s.runID != "" && !s.ended }

// prompt shows where the next line goes: the editor's prompt, or "> " on
// the output when idle.
func (s *session) prompt() {
	if s.ed != nil {
		p, secret := "> ", false
		switch {
		case len(s.pending) > 0:
			p, secret = "? ", s.pending[0].asksSecret()
		case s.busy():
			p = "… " // a message typed now is queued
		}
		s.ed.setPrompt(p, secret)
		return
	}
	if s.runID == "" && !s.eof {
		s.r.text("> ")
	}
}

// event shows one event of the chat and follows the interactions waiting.
func (s *session) event(ev chatops.Event) {
	if ev.RunID == s.runID && shows(agent.EventType(ev.Type)) {
		s.stopSpinner()
	}
	e := s.r.render(ev)
	switch {
	case e.Type == agent.EventInteractionRequested && e.Interaction != nil:
		s.pending = append(s.pending, pendingInteraction{runID: ev.RunID, in: e.Interaction})
		s.askNext()
		s.prompt()
	case e.Type == agent.EventInteractionResolved && e.Resolution != nil:
		s.pending = dropPending(s.pending, e.Resolution.InteractionID)
		s.prompt()
	case e.Type.Terminal() && ev.RunID == s.runID && s.runID != "":
		s.ended = true
		s.prompt()
	}
}

// turnOver ends the turn once its run is done and its end was shown, and
// runs what was queued.
func (s *session) turnOver(ctx context.Context) error {
	s.runID, s.done, s.pending = "", nil, nil
	s.ended, s.doneSeen, s.grace = false, false, nil
	s.stopSpinner()
	return s.next(ctx)
}

// shows reports whether an event of this type prints something (and so
// ends the wait for the first token).
func shows(t agent.EventType) bool {
	switch t {
	case agent.EventAssistantDelta, agent.EventToolStarted, agent.EventToolCompleted,
		agent.EventSystem, agent.EventInteractionRequested:
		return true
	}
	return t.Terminal()
}

// next runs the queued lines until one starts a turn, then prompts.
func (s *session) next(ctx context.Context) error {
	for s.runID == "" && len(s.queue) > 0 {
		q := s.queue[0]
		s.queue = s.queue[1:]
		if q.echo {
			s.r.line("> " + oneLine(q.text, 200))
		}
		if err := s.do(ctx, q.text); err != nil {
			return err
		}
	}
	s.prompt()
	return nil
}

// typed handles a line the user typed.
func (s *session) typed(ctx context.Context, line string) error {
	text := strings.TrimSpace(line)
	if s.ed == nil {
		s.r.midLine = false // the user's Enter ended the prompt's line
	}
	switch {
	case text == "":
		s.prompt()
		return nil
	case len(s.pending) > 0:
		s.answer(ctx, text) // answers are not history (a question may be secret)
		return nil
	}
	if s.ed != nil {
		kept := text
		if s.Scrub != nil {
			kept = s.Scrub(kept)
		}
		s.ed.remember(kept)
	}
	if s.runID != "" {
		if cmd, ok := chatops.ParseCommand(text); ok && slices.Contains(immediate, cmd.Name) {
			return s.command(ctx, cmd)
		}
		if !s.busy() { // the turn's end is shown: it runs in a moment
			s.queue = append(s.queue, queued{text: text})
			return nil
		}
		s.queue = append(s.queue, queued{text: text, echo: true})
		s.r.line(fmt.Sprintf("queued (%d): %s (sent when this turn ends)", len(s.queue), oneLine(text, 50)))
		s.prompt()
		return nil
	}
	return s.do(ctx, text)
}

// do runs a line while no turn runs: a command, or a message for the agent.
func (s *session) do(ctx context.Context, text string) error {
	if strings.HasPrefix(text, "//") {
		return s.send(ctx, text[1:])
	}
	if cmd, ok := chatops.ParseCommand(text); ok {
		return s.command(ctx, cmd)
	}
	if name, ok := commandWord(text); ok {
		s.r.line(fmt.Sprintf("Unknown command /%s: /help lists the commands. To send a message that starts with /, type // (//%s sends /%s).", name, name, name))
		s.prompt()
		return nil
	}
	return s.send(ctx, text)
}

// commandWord reports the word of a line that is typed as a command: a
// slash and a word of letters, digits, - and _ (so "/etc/hosts is empty"
// is a message, "/sttaus" a command).
func commandWord(text string) (string, bool) {
	if !strings.HasPrefix(text, "/") {
		return "", false
	}
	word, _, _ := strings.Cut(text[1:], " ")
	if word == "" {
		return "", false
	}
	for _, r := range word {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return "", false
		}
	}
	return word, true
}

// send starts a turn with text.
func (s *session) send(ctx context.Context, text string) error {
	run, err := s.Bot.Send(ctx, chatops.Prompt{ChatID: s.chat.ID, Text: text, By: s.By, Interactive: true})
	if err != nil {
		s.r.line("error: " + err.Error())
		s.prompt()
		return nil
	}
	s.runID, s.done = run.ID, run.Done()
	s.startSpinner()
	s.prompt()
	return nil
}

// command runs a chat command; /project is checked against the projects.
func (s *session) command(ctx context.Context, cmd chatops.Command) error {
	if cmd.Name == "project" && cmd.Arg != "" && s.Projects != nil {
		if msg, ok := s.checkProject(ctx, cmd.Arg); !ok {
			s.r.line(msg)
			s.prompt()
			return nil
		}
	}
	handled, note := s.consoleCommand(ctx, cmd)
	if handled {
		s.prompt()
		return nil
	}
	res, err := s.Bot.Execute(ctx, s.chat.ID, cmd)
	if err != nil {
		s.r.line("error: " + err.Error())
		s.prompt()
		return nil
	}
	switch cmd.Name {
	case "help":
		res.Text += "\nAn unknown /command is refused, not sent; start a message with // to send one that begins with / (//help sends /help)." +
			"\nA message typed while a turn runs is queued and sent when it ends (/queue lists them); /stop or Ctrl-C stops the turn and drops the queue."
	case "status":
		res.Text += s.statusDetail(ctx)
	case "model":
		if note != "" && strings.HasPrefix(res.Text, "model set to") {
			res.Text += " " + note
		}
	}
	if cmd.Name == "stop" && len(s.queue) > 0 {
		res.Text += fmt.Sprintf(" Dropped %d queued message(s).", len(s.queue))
		s.queue = nil
	}
	s.r.line(res.Text)
	if res.File != nil {
		s.r.line(res.File.Content)
	}
	if res.FollowUp != "" {
		s.prompt()
		return s.send(ctx, res.FollowUp)
	}
	if res.Chat != nil {
		s.stopSub()
		if s.events, s.stopSub, err = s.follow(ctx, res.Chat.ID); err != nil {
			return err
		}
		s.chat, s.runID, s.done, s.pending = *res.Chat, "", nil, nil
		s.ended, s.doneSeen, s.grace = false, false, nil
		s.stopSpinner()
	}
	s.prompt()
	return nil
}

// checkProject refuses a project that does not exist, naming those that do.
func (s *session) checkProject(ctx context.Context, name string) (string, bool) {
	ps, err := s.Projects.ListProjects(ctx)
	if err != nil {
		return "error: list projects: " + err.Error(), false
	}
	names := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Name == name {
			return "", true
		}
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return fmt.Sprintf("There is no project %s: there are none yet (threadline project add NAME --container C adds one). Nothing was changed.", name), false
	}
	return fmt.Sprintf("There is no project %s. Projects: %s. Nothing was changed.", name, strings.Join(names, ", ")), false
}

// interrupt handles Ctrl-C: it stops the running turn (dropping the queue);
// when idle, a second press within 2 s quits (reported true).
func (s *session) interrupt() bool {
	if s.busy() {
		s.Bot.Stop(s.chat.ID)
		s.r.line("[stopping…]")
		if n := len(s.queue); n > 0 {
			s.r.line(fmt.Sprintf("Dropped %d queued message(s).", n))
			s.queue = nil
		}
		return false
	}
	if time.Since(s.lastInterrupt) < 2*time.Second {
		s.r.line("")
		return true
	}
	s.lastInterrupt = time.Now()
	s.r.line("(press Ctrl-C again or Ctrl-D to quit)")
	s.prompt()
	return false
}

// endOfInput: the running turn and the queue still run; approvals waiting
// for an answer that can no longer come are declined.
func (s *session) endOfInput(ctx context.Context) {
	s.eof = true
	for _, p := range s.pending {
		if err := s.Bot.Respond(ctx, s.chat.ID, p.runID, Answer(p.in, "n", s.By)); err != nil {
			s.r.line("error: " + err.Error())
		}
	}
	if s.busy() {
		s.r.line("(end of input: waiting for the turn to finish; Ctrl-C stops it)")
	}
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

// startSpinner shows "thinking…" with the time elapsed until the turn's
// first visible event, on a terminal only.
func (s *session) startSpinner() {
	if s.tty == nil {
		return
	}
	s.waitingSince = time.Now()
	s.frame = 0
	s.spinner()
	s.spin.Reset(150 * time.Millisecond)
}

func (s *session) spinner() {
	if s.waitingSince.IsZero() || s.tty == nil {
		return
	}
	s.tty.SetStatus(fmt.Sprintf("%s thinking… %ds", spinnerFrames[s.frame%len(spinnerFrames)], int(time.Since(s.waitingSince).Seconds())))
	s.frame++
}

func (s *session) stopSpinner() {
	if s.waitingSince.IsZero() {
		return
	}
	s.waitingSince = time.Time{}
	s.spin.Stop()
	s.tty.SetStatus("")
}

// follow subscribes to the chat's new events until stop is called.
func (c *Console) follow(ctx context.Context, chatID agent.ChatID) (events <-chan chatops.Event, stop func(), err error) {
	seq, err := c.Bot.LastSeq(ctx, chatID)
	if err != nil {
		return nil, nil, fmt.Errorf("read chat %s: %w", chatID, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	return c.Bot.Subscribe(ctx, chatID, seq), cancel, nil
}

func dropPending(p []pendingInteraction, id string) []pendingInteraction {
	out := p[:0]
	for _, x := range p {
		if x.in.ID != id {
			out = append(out, x)
		}
	}
	return out
}
