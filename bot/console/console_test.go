package console_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/registry"
	"github.com/threadline-bot/threadline/bot/console"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/chatstore"
	"github.com/threadline-bot/threadline/providers/providertest"
	"github.com/threadline-bot/threadline/store"
)

// waitOut waits until out holds want after the first *seen bytes and moves
// *seen past it.
func waitOut(t *testing.T, out interface{ String() string }, seen *int, want string) {
	t.Helper()
	deadline := time.Now().Add(providertest.Scale(30 * time.Second))
	for {
		s := out.String()
		if i := strings.Index(s[*seen:], want); i >= 0 {
			*seen += i + len(want)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %q in:\n%s", want, s[*seen:])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// runConsole runs con on chat in the background; the returned func waits for
// its end (failing after a scaled deadline).
func runConsole(t *testing.T, con *console.Console, chat agent.ChatID) (wait func() error) {
	t.Helper()
	c, err := con.Bot.Chat(t.Context(), chat)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- con.Run(t.Context(), c) }()
	return func() error {
		t.Helper()
		select {
		case err := <-done:
			return err
		case <-time.After(providertest.Scale(30 * time.Second)):
			t.Fatal("the console did not end")
			return nil
		}
	}
}

// prompts are the messages the agent was sent (without the transcript
// that the prompt service puts before them for an agent with no session).
func prompts(p *chatopstest.Scripted) []string {
	var out []string
	for _, r := range p.Requests() {
		_, msg, ok := strings.Cut(r.Prompt, "</history>\n\nNew message:\n")
		if !ok {
			msg = r.Prompt
		}
		out = append(out, msg)
	}
	return out
}

// TestConsolePipeWaitsForEachTurn: piped lines are read one turn at a time;
// the end of the input waits for the running turn, whose answer is printed
// in full; nothing noisy (no spinner) when the output is not a terminal.
func TestConsolePipeWaitsForEachTurn(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Slow([]string{"one ", "two ", "three"}, 20*time.Millisecond),
		chatopstest.Slow([]string{"second ", "answer"}, 20*time.Millisecond))
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader("first\nsecond\n"), Out: &out, By: "console:t", History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	if got := prompts(s.Prov); !slices.Equal(got, []string{"first", "second"}) {
		t.Errorf("prompts %q", got)
	}
	o := out.String()
	for _, want := range []string{"one two three\n— done", "second answer\n— done"} {
		if !strings.Contains(o, want) {
			t.Errorf("out lacks %q:\n%s", want, o)
		}
	}
	if strings.Contains(o, "thinking") || strings.Contains(o, "queued") || strings.Contains(o, "\x1b") {
		t.Errorf("noise on a pipe:\n%q", o)
	}
}

// TestConsoleEndOfInputWaitsForTheTurn: input that ends during a turn (a
// pipe closed while the agent still works) does not stop it: the answer is
// printed and the console ends after it.
func TestConsoleEndOfInputWaitsForTheTurn(t *testing.T) {
	s, chat := stack(t)
	release := make(chan struct{})
	s.Prov.Add(chatopstest.Gated(release, "partial"))
	inR, inW := io.Pipe()
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: inR, Out: &out, By: "console:t", History: "-"}
	wait := runConsole(t, con, chat)
	seen := 0
	io.WriteString(inW, "go\n")
	waitOut(t, &out, &seen, "partial")
	inW.Close()
	time.Sleep(50 * time.Millisecond) // give a wrong console the chance to quit
	close(release)
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if o := out.String(); !strings.Contains(o, "partial\n— done") {
		t.Errorf("the turn's end is lost:\n%s", o)
	}
}

// TestConsoleCommandsRefused: an unknown /command is refused with /help and
// the // escape, not sent; //text sends /text; a path is a message; /agent
// and /project refuse unknown names and list the valid ones.
func TestConsoleCommandsRefused(t *testing.T) {
	s, chat := stack(t)
	log := slog.New(slog.DiscardHandler)
	bot := chatops.New(chatstore.Store{St: s.St}, s.Svc, chatstore.Feed{Hub: s.Hub, St: s.St}, agentList{"fake", "other"}, log)
	if err := s.St.CreateProject(t.Context(), &store.Project{Name: "web", Container: "web-ct"}); err != nil {
		t.Fatal(err)
	}
	s.Prov.Add(chatopstest.Answer("ok1"), chatopstest.Answer("ok2"))
	in := strings.Join([]string{"/sttaus", "//etc is empty", "/etc/hosts is empty", "/agent nosuch", "/project nosuch", "/project web", "/mode nosuch", "/status", "/help"}, "\n") + "\n"
	var out lockedBuffer
	con := &console.Console{Bot: bot, In: strings.NewReader(in), Out: &out, By: "console:t", Projects: s.St, History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	if got := prompts(s.Prov); !slices.Equal(got, []string{"/etc is empty", "/etc/hosts is empty"}) {
		t.Errorf("prompts %q", got)
	}
	o := out.String()
	for _, want := range []string{
		"Unknown command /sttaus: /help lists the commands. To send a message that starts with /, type //",
		"There is no such agent here. Valid agents: fake, other.",
		"There is no project nosuch. Projects: web. Nothing was changed.",
		"project set to web for this chat.",
		"Usage: /mode plan|default.",
		"Anything else is sent to the agent.\nAn unknown /command is refused, not sent; start a message with // to send one that begins with /",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("out lacks %q:\n%s", want, o)
		}
	}
	c, err := s.Bot.Chat(t.Context(), chat)
	if err != nil {
		t.Fatal(err)
	}
	if c.Agent != "fake" || c.Project != "web" {
		t.Errorf("chat agent %q project %q", c.Agent, c.Project)
	}
}

// agentList is a chatops.Agents of installed agents.
type agentList []string

func (a agentList) Agents(context.Context) []chatops.AgentInfo {
	var out []chatops.AgentInfo
	for _, id := range a {
		out = append(out, chatops.AgentInfo{ID: id, Installed: true, Args: registry.ArgRules{}})
	}
	return out
}

// TestConsoleQuestionAnswers: a form's questions are answered one at a
// time; an answer that is not an option is refused (the question stays);
// a number picks an option, free text goes where AllowOther; the card names
// the agent's own deadline.
func TestConsoleQuestionAnswers(t *testing.T) {
	s, chat := stack(t)
	got := make(chan agent.InteractionResponse, 1)
	at := time.Now().Add(time.Hour)
	s.Prov.Add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{
			ID: "q1", NativeID: []byte(`"q1"`), Kind: agent.KindQuestion, AutoResolveAt: at,
			Questions: []agent.Question{
				{ID: "color", Text: "Which colour?", Options: []string{"red", "blue"}},
				{ID: "name", Text: "Which name?", Options: []string{"Ada", "Bob"}, AllowOther: true},
			}}})
		select {
		case r := <-req.Responses:
			got <- r
			emit(agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "q1", Status: agent.StatusAnswered, By: r.By}})
		case <-ctx.Done():
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader("ask\ngreen\n2\nZoe\n"), Out: &out, By: "console:t", History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.Decision != agent.DecisionAnswer || r.Answers["color"] != "blue" || r.Answers["name"] != "Zoe" {
			t.Errorf("response %+v", r)
		}
	default:
		t.Fatal("no answer reached the agent")
	}
	o := out.String()
	for _, want := range []string{
		"answer each question in turn with an option's number or your own text",
		"(the agent goes on without an answer at " + at.Local().Format("15:04:05") + ")",
		"(1/2) Which colour?",
		`That is not one of the options: answer with an option's number (1–2) or its text, or n to decline.`,
		"(2/2) Which name?",
	} {
		if !strings.Contains(o, want) {
			t.Errorf("out lacks %q:\n%s", want, o)
		}
	}
}

// TestConsoleEndOfInputDeclines: input that ends while an approval waits
// declines it, and the turn goes on to its end.
func TestConsoleEndOfInputDeclines(t *testing.T) {
	s, chat := stack(t)
	got := make(chan agent.InteractionResponse, 1)
	s.Prov.Add(chatopstest.Asking("i1", "make", got, "after"))
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader("go\n"), Out: &out, By: "console:t", History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	if r := <-got; r.Decision != agent.DecisionDecline {
		t.Errorf("answer %+v", r)
	}
	if o := out.String(); !strings.Contains(o, "after\n— done") {
		t.Errorf("out:\n%s", o)
	}
}

// TestAnswerQuestion: the exported Answer (run's prompt) picks options by
// number or text, declines with n unless n is an option, keeps free text.
func TestAnswerQuestion(t *testing.T) {
	q := func(opts []string, other, multi bool) *agent.Interaction {
		return &agent.Interaction{ID: "i", Kind: agent.KindQuestion, Questions: []agent.Question{{ID: "q", Options: opts, AllowOther: other, MultiSelect: multi}}}
	}
	for _, c := range []struct {
		in       *agent.Interaction
		text     string
		decision agent.Decision
		answer   string
	}{
		{q([]string{"red", "blue"}, false, false), "2", agent.DecisionAnswer, "blue"},
		{q([]string{"red", "blue"}, false, false), "RED", agent.DecisionAnswer, "red"},
		{q([]string{"red", "blue"}, false, false), "n", agent.DecisionDecline, ""},
		{q([]string{"yes", "no"}, false, false), "no", agent.DecisionAnswer, "no"},
		{q([]string{"a", "b", "c"}, false, true), "1, 3", agent.DecisionAnswer, "a\nc"},
		{q([]string{"a", "b"}, true, false), "something else", agent.DecisionAnswer, "something else"},
		{q(nil, false, false), "free", agent.DecisionAnswer, "free"},
	} {
		r := console.Answer(c.in, c.text, "u")
		if r.Decision != c.decision || r.Answers["q"] != c.answer {
			t.Errorf("%q → %s %q, want %s %q", c.text, r.Decision, r.Answers["q"], c.decision, c.answer)
		}
	}
}

// TestConsoleFork: /fork switches the console to a new chat forked from this
// one (chatops' one fork); the next message goes to the fork, the parent is
// left as it was.
func TestConsoleFork(t *testing.T) {
	s, chat := stack(t)
	s.Prov.Add(chatopstest.Answer("first answer"), chatopstest.Answer("in the fork"))
	var out lockedBuffer
	con := &console.Console{Bot: s.Bot, In: strings.NewReader("first\n/fork\nnext\n"), Out: &out, By: "console:t", History: "-"}
	if err := runConsole(t, con, chat)(); err != nil {
		t.Fatal(err)
	}
	reqs := s.Prov.Requests()
	if len(reqs) != 2 || reqs[0].ChatID != string(chat) || reqs[1].ChatID == string(chat) {
		t.Fatalf("requests %+v", reqs)
	}
	if o := out.String(); !strings.Contains(o, "Forked chat "+string(chat)+" into a new chat "+reqs[1].ChatID) || !strings.Contains(o, "in the fork") {
		t.Errorf("out:\n%s", o)
	}
	if !strings.Contains(reqs[1].Prompt, "first answer") && !reqs[1].Fork {
		t.Errorf("the fork carries nothing of its parent: %+v", reqs[1])
	}
	evs, err := s.St.EventsAfter(t.Context(), chat, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if strings.Contains(string(ev.Payload), "in the fork") || strings.Contains(string(ev.Payload), `"next"`) {
			t.Errorf("the parent got the fork's event %s", ev.Payload)
		}
	}
}
