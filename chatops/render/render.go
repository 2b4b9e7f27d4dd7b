// render.go: the state of one run as its events arrive, and the message views
// it is shown as. Everything shown is derived from the persisted events alone,
// so a replay renders exactly what the live stream did.

// Package render is the pure part of chatops: a fold from a run's chat events
// to the platform-neutral views of its messages (answer parts, interaction
// cards, the file of a long answer), Markdown splitting that keeps code fences
// balanced, and the View and button types the front-ends draw. It does no I/O
// and reads no clock: every time it shows comes from the events.
package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Event is one persisted event of a chat's log.
type Event = runhub.Event

// RenderOptions shape the views of a run.
type RenderOptions struct {
	// PartLimit is the most bytes of answer per message (default 3,500).
	PartLimit int
	// MaxParts is the most answer messages of a run (default 8); a longer
	// answer is uploaded as a file when the run ends.
	MaxParts int
	// MaxSteps is how many of the latest tool steps are listed (default 5).
	MaxSteps int
	// CardLimit bounds the command or diff shown on a card (default 2,500).
	CardLimit int
	// Mention renders a platform-qualified user id ("slack:U1") for display;
	// nil shows it as is.
	Mention func(by string) string
}

// WithDefaults returns o with every unset limit at its default and a nil
// Mention replaced by the identity.
func (o RenderOptions) WithDefaults() RenderOptions {
	if o.PartLimit <= 0 {
		o.PartLimit = 3500
	}
	if o.MaxParts <= 0 {
		o.MaxParts = 8
	}
	if o.MaxSteps <= 0 {
		o.MaxSteps = 5
	}
	if o.CardLimit <= 0 {
		o.CardLimit = 2500
	}
	if o.Mention == nil {
		o.Mention = func(by string) string { return by }
	}
	return o
}

// Slot names: a run's messages are "answer/0", "answer/1", ..., one
// "card/<interaction id>" per interaction and "file" for a long answer's upload.
const (
	SlotFile       = "file"
	slotAnswerPref = "answer/"
	slotCardPref   = "card/"
)

// AnswerIndex returns k of an "answer/k" slot; ok is false for other slots.
func AnswerIndex(slot string) (k int, ok bool) {
	n, ok := strings.CutPrefix(slot, slotAnswerPref)
	if !ok {
		return 0, false
	}
	k, err := strconv.Atoi(n)
	return k, err == nil
}

// IsAnswer reports whether slot holds a part of the answer ("answer/k").
func IsAnswer(slot string) bool { return strings.HasPrefix(slot, slotAnswerPref) }

// CardCodeLen is the length of a card's code (hex digits).
const CardCodeLen = 4

// CardCode returns the short code an approval card shows, so that a typed
// decision can name it ("approve 3fa2"): the first CardCodeLen hex digits of
// a hash of the run and interaction ids. Codes of a thread's pending cards
// may collide (one chance in 65536 per pair); such a code is refused as
// ambiguous.
func CardCode(runID agent.RunID, interactionID agent.InteractionID) string {
	sum := sha256.Sum256([]byte(string(runID) + "|" + string(interactionID)))
	return hex.EncodeToString(sum[:])[:CardCodeLen]
}

// Priority orders a workspace's pending updates.
type Priority int

// Priorities, highest last.
const (
	PriorityProgress Priority = iota
	PriorityFinal
	PriorityCard
)

// SlotView is the desired content of one message of a run.
type SlotView struct {
	Slot     string
	View     View
	Priority Priority
	// Final marks the message's last content.
	Final bool
	// Upload, on the file slot, is the content to upload instead of a message.
	Upload string
}

type card struct {
	in  agent.Interaction
	res *agent.Resolution
	at  time.Time // when the request was made (its event's time)
}

// Run accumulates one run's events. It is owned by one goroutine.
type Run struct {
	opts         RenderOptions
	chatID       agent.ChatID
	runID        agent.RunID
	agent, model string
	// reported is the model the agent said it runs (agent.Event.Model).
	reported       string
	project        string
	firstSeq, last int64
	started, at    time.Time
	body           strings.Builder
	// breakText is set by a tool call: the next text starts a paragraph.
	breakText bool
	steps     []Step
	plan      *Plan
	usage     *agent.Usage
	files     map[string]bool
	// change is what the turn changed on the chat's own branch (a
	// system/workspace event): the footer says it and offers its actions.
	change    *agent.Change
	cards     map[string]*card
	cardOrder []string
	terminal  agent.EventType
	endText   string
	notes     []string
}

// NewRun starts the fold of run runID of chat chatID (project names the
// chat's project on the status line; empty shows none).
func NewRun(opts RenderOptions, chatID agent.ChatID, runID agent.RunID, project string) *Run {
	return &Run{
		opts: opts.WithDefaults(), chatID: chatID, runID: runID, project: project,
		files: map[string]bool{}, cards: map[string]*card{},
	}
}

// Apply folds one event of the run into the state. An event whose payload
// does not decode only moves the seqs and times.
func (r *Run) Apply(ev Event) {
	if r.firstSeq == 0 {
		r.firstSeq = ev.Seq
	}
	r.last = ev.Seq
	if !ev.At.IsZero() {
		if r.started.IsZero() {
			r.started = ev.At
		}
		r.at = ev.At
	}
	en, err := chatlog.Decode(ev.Type, ev.Payload)
	if err != nil {
		return
	}
	e := en.Agent
	if e.Model != "" && e.Type != agent.EventRunStarted {
		r.reported = e.Model
	}
	switch e.Type {
	case agent.EventRunStarted:
		if en.Run != nil {
			r.agent, r.model = en.Run.Agent, en.Run.Model
		}
		r.started = ev.At
	case agent.EventSystem:
		if e.Model != "" && r.model == "" {
			r.model = e.Model
		}
		if e.Subtype == "session_recovered" || e.Subtype == "api_retry" || e.Subtype == "version_notice" {
			r.notes = append(r.notes, e.Text)
		}
		if e.Subtype == agent.SubtypeWorkspace && e.Change != nil {
			r.change = e.Change
		}
	case agent.EventAssistantDelta:
		r.text(e.Text)
	case agent.EventToolStarted:
		if e.Tool != nil {
			r.steps = append(r.steps, Step{ID: e.Tool.ID, Tool: oneLine(e.Tool.Name, 60), Title: toolLine(e.Tool),
				Status: StatusRunning, At: r.body.Len()})
			r.breakText = true
			if f := changedFile(e.Tool); f != "" {
				r.files[f] = true
			}
		}
	case agent.EventToolOutput:
		if s := r.step(e.Tool); s != nil && len(s.Output) < 4*OutputLimit {
			s.Output = clipOutput(s.Output + e.Text)
		}
	case agent.EventToolCompleted:
		if s := r.step(e.Tool); s != nil {
			s.Status = StatusDone
			if e.Tool.IsError {
				s.Status = StatusFailed
			}
			if e.Tool.Output != "" {
				s.Output = clipOutput(e.Tool.Output)
			}
		}
		r.breakText = true
	case agent.EventPlanUpdated:
		if e.Plan != nil {
			r.plan = planFrom(e.Plan)
		}
	case agent.EventUsageUpdated:
		r.usage = e.Usage
	case agent.EventInteractionRequested:
		if e.Interaction != nil {
			if _, ok := r.cards[e.Interaction.ID]; !ok {
				r.cardOrder = append(r.cardOrder, e.Interaction.ID)
			}
			r.cards[e.Interaction.ID] = &card{in: *e.Interaction, at: ev.At}
		}
	case agent.EventInteractionResolved:
		if e.Resolution != nil {
			if c, ok := r.cards[e.Resolution.InteractionID]; ok {
				res := *e.Resolution
				c.res = &res
			}
		}
	case agent.EventRunCompleted:
		r.terminal = e.Type
		if r.body.Len() == 0 && e.Text != "" {
			r.text(e.Text)
		}
	case agent.EventRunFailed, agent.EventRunInterrupted:
		r.terminal, r.endText = e.Type, e.Text
	}
}

// text adds answer text; the first text after a tool call starts a new
// paragraph, so that what the agent said before and after the call stays
// apart.
func (r *Run) text(s string) {
	if s == "" {
		return
	}
	if r.breakText && r.body.Len() > 0 {
		b := r.body.String()
		switch {
		case strings.HasSuffix(b, "\n\n") || strings.HasPrefix(s, "\n\n"):
		case strings.HasSuffix(b, "\n") || strings.HasPrefix(s, "\n"):
			r.body.WriteByte('\n')
		default:
			r.body.WriteString("\n\n")
		}
	}
	r.breakText = false
	r.body.WriteString(s)
}

// step returns the run's step of tool call t (nil when there is none).
func (r *Run) step(t *agent.Tool) *Step {
	if t == nil {
		return nil
	}
	for i := len(r.steps) - 1; i >= 0; i-- {
		if r.steps[i].ID == t.ID {
			return &r.steps[i]
		}
	}
	return nil
}

// Activity is what the agent is doing now ("is running Bash…"), for a
// platform's status indicator; "" once the run has ended.
func (r *Run) Activity() string {
	if r.Done() {
		return ""
	}
	for _, id := range r.cardOrder {
		if r.cards[id].res == nil {
			return ActivityWaiting
		}
	}
	for i := len(r.steps) - 1; i >= 0; i-- {
		if !r.steps[i].Done() {
			return activityRunning(r.steps[i].Tool)
		}
	}
	return ActivityThinking
}

// Steps returns the run's tool steps in the order they started.
func (r *Run) Steps() []Step { return append([]Step(nil), r.steps...) }

// Done reports whether the run has ended (a terminal event, or Interrupt).
func (r *Run) Done() bool { return r.terminal != "" }

// RunID is the id of the run being folded.
func (r *Run) RunID() agent.RunID { return r.runID }

// FirstSeq is the seq of the first event applied (0 before any).
func (r *Run) FirstSeq() int64 { return r.firstSeq }

// LastSeq is the seq of the newest event applied.
func (r *Run) LastSeq() int64 { return r.last }

// Interrupt ends a run its log never ended (the process that ran it died):
// its messages then show it stopped, with why.
func (r *Run) Interrupt(why string) {
	r.terminal, r.endText = agent.EventRunInterrupted, why
}

// Card is an interaction of the run as its card shows it.
type Card struct {
	Interaction agent.Interaction
	// Pending is set while the interaction waits for an answer in a live run.
	Pending bool
	// At is when it was requested (its event's time).
	At time.Time
}

// Cards returns the run's interactions in the order they were requested.
func (r *Run) Cards() []Card {
	out := make([]Card, 0, len(r.cardOrder))
	for _, id := range r.cardOrder {
		c := r.cards[id]
		out = append(out, Card{Interaction: c.in, Pending: c.res == nil && !r.Done(), At: c.at})
	}
	return out
}

// Views returns the desired content of every message of the run.
//
// Each answer part carries the tool steps that began in its text (Tasks, with
// their offsets in the part's body), for platforms that show them in place
// (Slack task cards in a native stream). The last part also carries the plan,
// the status line, the compact step lines (Steps, for platforms without task
// cards; kept in the final message), the activity, and while the run lives,
// the Stop button.
func (r *Run) Views() []SlotView {
	o := r.opts
	body := r.body.String()
	final := r.Done()
	segs := segments(body, o.PartLimit)
	overflow := len(segs) > o.MaxParts
	if overflow {
		segs = segs[:o.MaxParts]
	}
	parts := make([]string, len(segs))
	for i, sg := range segs {
		parts[i] = sg.render(body)
	}
	if body == "" {
		parts, segs = []string{""}, []segment{{}}
	}
	prio := PriorityProgress
	if final {
		prio = PriorityFinal
	}
	tasks := r.partTasks(segs, parts)
	out := make([]SlotView, 0, len(parts)+len(r.cardOrder)+1)
	for i, p := range parts {
		v := View{Body: p, Tasks: tasks[i]}
		if i == len(parts)-1 {
			// The live part carries the status line, the steps and the Stop
			// button, so that earlier parts never change again.
			v.Status = r.status()
			v.Plan = r.plan
			v.Steps = r.stepLines()
			v.Activity = r.Activity()
			if overflow && !final {
				// Not in the body, which a native stream only appends to.
				v.Steps = append([]string{fmt.Sprintf("… the answer is longer than %d messages: the whole answer is attached when the run ends", o.MaxParts)}, v.Steps...)
			}
			if v.Body == "" && !final {
				v.Body, v.Working = "_Working…_", true
			}
			if final {
				v.Footer = r.footer()
				if overflow {
					v.Footer += fmt.Sprintf(" · the whole answer (%d bytes) is attached as answer.md", len(body))
				}
				v.Buttons = r.shipButtons()
			} else {
				v.Buttons = []Button{{ID: ButtonStop, Label: "Stop", Style: StyleDanger,
					Value: Ref{ChatID: r.chatID, RunID: r.runID}.Encode()}}
			}
		}
		v.Fallback = fallback(v)
		out = append(out, SlotView{Slot: fmt.Sprintf("%s%d", slotAnswerPref, i), View: v, Priority: prio, Final: final})
	}
	if overflow && final {
		out = append(out, SlotView{Slot: SlotFile, Upload: body, Priority: PriorityFinal, Final: true,
			View: View{Body: "answer.md"}})
	}
	for _, id := range r.cardOrder {
		c := r.cards[id]
		out = append(out, SlotView{Slot: slotCardPref + id, View: r.cardView(c), Priority: PriorityCard, Final: c.res != nil})
	}
	return out
}

// partTasks assigns each step to the part its text position falls in (a step
// at a part's end stays with that part, so an earlier part keeps its steps
// when the next part begins) and makes its offset relative to the part.
func (r *Run) partTasks(segs []segment, parts []string) [][]Step {
	out := make([][]Step, len(parts))
	last := len(parts) - 1
	for _, st := range r.steps {
		k := last
		for i, sg := range segs[:last] {
			if st.At <= sg.end {
				k = i
				break
			}
		}
		sg := segs[k]
		at := st.At - sg.start
		if sg.reopen != "" {
			at += len(sg.reopen) + 1
		}
		st.At = min(max(at, 0), len(parts[k]))
		out[k] = append(out[k], st)
	}
	return out
}

func fallback(v View) string {
	s := v.Body
	if s == "" || v.Working {
		s = v.Status
	}
	const max = 3000
	if len(s) > max {
		s = s[:cutRune(s, max)] + "…"
	}
	return s
}

func cutRune(s string, n int) int {
	for n > 0 && n < len(s) && (s[n]&0xC0) == 0x80 {
		n--
	}
	return n
}

// status is the status line: the agent, the model it reported (else the one
// asked for; none when neither is known), the project and, while the run
// lives, how long it has run (the final footer says how long it took).
func (r *Run) status() string {
	parts := []string{orDash(r.agent)}
	if m := cmpOr(r.reported, r.model); m != "" {
		parts = append(parts, m)
	}
	if r.project != "" {
		parts = append(parts, r.project)
	}
	if !r.Done() && !r.started.IsZero() && !r.at.IsZero() {
		parts = append(parts, fmtDuration(r.at.Sub(r.started)))
	}
	return strings.Join(parts, " · ")
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// stepLines are the notes, the plan and the latest steps as compact lines.
func (r *Run) stepLines() []string {
	var out []string
	for _, n := range r.notes {
		out = append(out, "⚠ "+oneLine(n, 150))
	}
	out = append(out, r.plan.Lines()...)
	steps := r.steps
	if len(steps) > r.opts.MaxSteps {
		out = append(out, fmt.Sprintf("… %d earlier steps", len(steps)-r.opts.MaxSteps))
		steps = steps[len(steps)-r.opts.MaxSteps:]
	}
	for _, s := range steps {
		out = append(out, s.Line())
	}
	return out
}

func (r *Run) footer() string {
	var parts []string
	d := ""
	if !r.started.IsZero() && !r.at.IsZero() {
		d = " after " + fmtDuration(r.at.Sub(r.started))
	}
	switch r.terminal {
	case agent.EventRunCompleted:
		parts = append(parts, "Done"+strings.Replace(d, " after ", " in ", 1))
	case agent.EventRunInterrupted:
		msg := "Stopped" + d
		if t := strings.TrimSuffix(strings.TrimSpace(r.endText), "."); t != "" && !strings.EqualFold(t, "stopped") {
			msg += ": " + oneLine(t, 300)
		}
		parts = append(parts, msg)
	default:
		msg := "The run failed" + d
		if r.endText != "" {
			msg += ": " + oneLine(r.endText, 300)
		}
		parts = append(parts, msg)
	}
	if u := r.usage; u != nil {
		parts = append(parts, fmt.Sprintf("%s in / %s out tokens",
			thousands(u.InputTokens+u.CacheReadTokens+u.CacheCreationTokens), thousands(u.OutputTokens)))
		if u.CostUSD > 0 {
			parts = append(parts, fmt.Sprintf("$%.4f", u.CostUSD))
		}
	}
	if r.change != nil {
		parts = append(parts, r.change.String())
	} else if n := len(r.files); n > 0 {
		files := make([]string, 0, n)
		for f := range r.files {
			files = append(files, f)
		}
		sort.Strings(files)
		s := fmt.Sprintf("%d files changed", n)
		if n == 1 {
			s = "1 file changed"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " · ")
}

// shipButtons are the actions on a turn's branch offered under its final
// answer: View diff, Push, Open PR (none without a workspace change).
func (r *Run) shipButtons() []Button {
	if r.change == nil || r.change.Branch == "" {
		return nil
	}
	ref := Ref{ChatID: r.chatID, RunID: r.runID}.Encode()
	return []Button{
		{ID: ButtonDiff, Label: "View diff", Value: ref},
		{ID: ButtonPush, Label: "Push", Value: ref},
		{ID: ButtonPR, Label: "Open PR", Style: StylePrimary, Value: ref},
	}
}

func (r *Run) cardView(c *card) View {
	in := c.in
	var b strings.Builder
	title := in.Title
	switch {
	case title != "":
	case in.Kind == agent.KindQuestion:
		title = "The agent has a question"
	default:
		title = "The agent asks for approval"
	}
	fmt.Fprintf(&b, "**%s**", oneLine(title, 200))
	if in.Command != "" {
		fmt.Fprintf(&b, "\n```\n%s\n```", clipBlock(in.Command, r.opts.CardLimit))
	}
	if in.Cwd != "" {
		fmt.Fprintf(&b, "\nin `%s`", in.Cwd)
	}
	if in.Reason != "" {
		fmt.Fprintf(&b, "\n%s", oneLine(in.Reason, 500))
	}
	if in.Diff != "" {
		fmt.Fprintf(&b, "\n```diff\n%s\n```", clipBlock(in.Diff, r.opts.CardLimit))
	}
	for _, q := range in.Questions {
		b.WriteString("\n")
		if q.Header != "" {
			fmt.Fprintf(&b, "**%s** ", oneLine(q.Header, 100))
		}
		b.WriteString(oneLine(q.Text, 500))
		for i, o := range q.Options {
			fmt.Fprintf(&b, "\n%d. %s", i+1, oneLine(o, 200))
		}
	}
	v := View{}
	if c.res != nil {
		fmt.Fprintf(&b, "\n\n%s", r.resolutionLine(c.res))
		v.Body = b.String()
		v.Fallback = oneLine(title, 200) + ": " + resolutionWord(c.res)
		return v
	}
	ref := Ref{ChatID: r.chatID, RunID: r.runID, InteractionID: agent.InteractionID(in.ID)}
	with := func(d agent.Decision) string { x := ref; x.Decision = d; return x.Encode() }
	if in.Kind == agent.KindQuestion {
		if len(in.Questions) == 1 && !in.Questions[0].MultiSelect && !in.Questions[0].Secret {
			q := in.Questions[0]
			for i, o := range q.Options {
				if i == 20 {
					break
				}
				x := ref
				x.Decision, x.QuestionID, x.Answer = agent.DecisionAnswer, q.ID, o
				v.Buttons = append(v.Buttons, Button{ID: fmt.Sprintf("%s%d", ButtonOptionPrefix, i), Label: clipLabel(o), Value: x.Encode()})
			}
		}
		answer := ref
		answer.Decision = agent.DecisionAnswer
		if len(in.Questions) == 1 {
			// A front-end that takes the answer as a reply (Matrix) needs to know
			// which question it answers, options or not.
			answer.QuestionID = in.Questions[0].ID
		}
		v.Buttons = append(v.Buttons,
			Button{ID: ButtonAnswer, Label: "Answer…", Value: answer.Encode(), Style: StylePrimary},
			Button{ID: ButtonDecline, Label: "Decline", Value: with(agent.DecisionDecline)},
		)
	} else {
		code := CardCode(r.runID, ref.InteractionID)
		fmt.Fprintf(&b, "\n_Card `%s`: press a button, or reply `approve %s`, `approve for session %s` or `deny %s`._", code, code, code, code)
		v.Buttons = []Button{
			{ID: ButtonApprove, Label: "Approve", Value: with(agent.DecisionApprove), Style: StylePrimary},
			{ID: ButtonApproveSession, Label: "Approve for session", Value: with(agent.DecisionApproveSession)},
			{ID: ButtonDecline, Label: "Decline", Value: with(agent.DecisionDecline)},
			{ID: ButtonCancel, Label: "Stop turn", Value: with(agent.DecisionCancel), Style: StyleDanger},
		}
	}
	v.Body = b.String()
	v.Fallback = oneLine(title, 200)
	return v
}

func resolutionWord(res *agent.Resolution) string {
	switch res.Status {
	case "approved":
		return "Approved"
	case "approved_for_session":
		return "Approved for this session"
	case "declined":
		return "Declined"
	case "cancelled":
		return "Turn stopped"
	case "answered":
		return "Answered"
	case "turn_ended":
		return "Not answered: the turn ended"
	case "timed_out", "expired":
		return "Not answered in time"
	}
	switch res.Decision {
	case agent.DecisionApprove:
		return "Approved"
	case agent.DecisionApproveSession:
		return "Approved for this session"
	case agent.DecisionDecline:
		return "Declined"
	case agent.DecisionCancel:
		return "Turn stopped"
	case agent.DecisionAnswer:
		return "Answered"
	}
	if res.Status != "" {
		return strings.ToUpper(res.Status[:1]) + strings.ReplaceAll(res.Status[1:], "_", " ")
	}
	return "Resolved"
}

func (r *Run) resolutionLine(res *agent.Resolution) string {
	s := "**" + resolutionWord(res) + "**"
	if res.By != "" {
		s += " by " + r.opts.Mention(res.By)
	}
	return s
}

func clipLabel(s string) string {
	s = oneLine(s, 70)
	return s
}

// clipBlock bounds a command or diff shown on a card; the full text stays in
// the chat's events.
func clipBlock(s string, limit int) string {
	s = strings.TrimRight(s, "\n")
	s = strings.ReplaceAll(s, "```", "ˋˋˋ")
	if len(s) <= limit {
		return s
	}
	cut := cutRune(s, limit)
	if i := strings.LastIndexByte(s[:cut], '\n'); i > limit/2 {
		cut = i
	}
	rest := strings.Count(s[cut:], "\n") + 1
	return s[:cut] + fmt.Sprintf("\n… (%d more lines)", rest)
}

func toolLine(t *agent.Tool) string {
	s := t.Summary
	if s == "" {
		s = t.Name
	}
	return oneLine(s, 120)
}

// changedFile returns the file a tool call edits, if it is an editing tool.
func changedFile(t *agent.Tool) string {
	name := strings.ToLower(t.Name)
	if !strings.Contains(name, "edit") && !strings.Contains(name, "write") && !strings.Contains(name, "patch") {
		return ""
	}
	var in map[string]any
	if json.Unmarshal(t.Input, &in) != nil {
		return ""
	}
	for _, k := range []string{"file_path", "path", "notebook_path", "filename"} {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func oneLine(s string, max int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if len(s) > max {
		s = s[:cutRune(s, max)] + "…"
	}
	return s
}

func fmtDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if d < time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

func thousands(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return s
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// RenderRun returns the views of a run from its events, as the live renderer
// shows them once it has seen all of them (front-ends and tests use it to
// re-render a run from the store).
func RenderRun(chatID agent.ChatID, project string, opts RenderOptions, events []Event) []SlotView {
	var r *Run
	for _, ev := range events {
		if ev.RunID == "" {
			continue
		}
		if r == nil {
			r = NewRun(opts, chatID, ev.RunID, project)
		}
		if ev.RunID == r.runID {
			r.Apply(ev)
		}
	}
	if r == nil {
		return nil
	}
	return r.Views()
}
