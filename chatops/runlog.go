// runlog.go: the `log` command: a chat's whole transcript (every run's
// prompt, text, tool calls with their input and output, interactions,
// errors and end) as a Markdown file, scrubbed and bounded.

package chatops

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
)

// Bounds of the log file.
const (
	// LogMaxBytes bounds the whole file; the runs after the cut are left
	// out and the cut is said.
	LogMaxBytes = 10 << 20
	// LogMaxPart bounds one tool call's input, one tool call's output and
	// one interaction's text; the cut is said.
	LogMaxPart = 20 << 10
)

// runLog posts the chat's whole transcript as a Markdown file (the console
// prints it).
func runLog(ctx context.Context, c *call) (Result, error) {
	r := c.bot.Redact
	if r == nil && c.t != nil {
		r = c.t.opts.Redact
	}
	w := logWriter{max: LogMaxBytes, part: LogMaxPart, redact: r}
	w.begin(c.chatID)
	n, err := c.bot.eachEvent(ctx, c.chatID, w.add)
	if err != nil {
		return Result{}, err
	}
	if n == 0 {
		return Result{Text: "This chat has no runs yet: there is no log to show."}, nil
	}
	doc, runs := w.finish()
	name := w.scrub(strings.NewReplacer("/", "-", " ", "-").Replace(cmp.Or(w.branch, string(c.chatID))) + "-log.md")
	return Result{Text: fmt.Sprintf("The log of this chat: %s.", plural(runs, "run")), File: &PostFile{Name: name, Content: doc}}, nil
}

// eachEvent hands the chat's persisted events to f, oldest first, until f
// returns false (those appended after the read started are left out), and
// returns how many it handed.
func (b *Chats) eachEvent(ctx context.Context, chatID agent.ChatID, f func(Event) bool) (int, error) {
	last, err := b.feed.LastSeq(ctx, chatID)
	if err != nil || last == 0 {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := 0
	for ev := range b.feed.Subscribe(ctx, chatID, 0) {
		n++
		if !f(ev) || ev.Seq >= last {
			return n, nil
		}
	}
	return n, ctx.Err()
}

// logWriter renders a chat's events as Markdown.
type logWriter struct {
	max, part int
	redact    Redactor

	sb strings.Builder
	// section is what is being written for the current run part.
	section strings.Builder
	cut     bool
	runs    int
	// branch is the chat's branch, from the workspace notes.
	branch string

	// Per run.
	run              agent.RunID
	open             bool
	started          time.Time
	text, reasoning  strings.Builder
	sawText          bool
	usage            *agent.Usage
	tools            map[string]*toolCall
	interactionsByID map[string]string
	toolOrder        []string
}

// toolCall is a tool call of the run: its output so far, kept up to a
// little over the part bound, and how many bytes more it had.
type toolCall struct {
	name  string
	out   strings.Builder
	extra int
	done  bool
}

// write appends a chunk of the call's output, keeping what the part bound
// (and the redactor, at the cut) can use.
func (t *toolCall) write(s string, part int) {
	keep := max(0, min(len(s), part+4096-t.out.Len()))
	t.out.WriteString(s[:keep])
	t.extra += len(s) - keep
}

func (w *logWriter) scrub(s string) string {
	if w.redact == nil {
		return s
	}
	return w.redact.String(s)
}

// begin writes the document's title.
func (w *logWriter) begin(chatID agent.ChatID) {
	fmt.Fprintf(&w.sb, "# Log of chat %s\n", w.scrub(string(chatID)))
}

// add writes the next event; it reports false once the document is cut.
func (w *logWriter) add(ev Event) bool {
	if w.cut {
		return false
	}
	if ev.RunID != w.run || w.runs == 0 {
		w.endRun()
		w.beginRun(ev)
		w.runs++
	}
	w.event(ev)
	w.flush()
	return !w.cut
}

// finish closes the last run and returns the document and how many runs
// it holds.
func (w *logWriter) finish() (string, int) {
	if !w.cut {
		w.endRun()
		w.flush()
	}
	return w.sb.String(), w.runs
}

// flush moves the pending section into the document, unless it would pass
// the bound: then the cut is said and nothing more is written.
func (w *logWriter) flush() {
	if w.cut || w.section.Len() == 0 {
		return
	}
	s := w.section.String()
	w.section.Reset()
	if w.sb.Len()+len(s) > w.max {
		fmt.Fprintf(&w.sb, "\n---\n\n*The log is cut here: it passed %d bytes. What follows is left out.*\n", w.max)
		w.cut = true
		return
	}
	w.sb.WriteString(s)
}

func (w *logWriter) beginRun(ev Event) {
	w.run, w.open, w.started = ev.RunID, true, ev.At
	w.text.Reset()
	w.reasoning.Reset()
	w.sawText, w.usage = false, nil
	w.tools, w.interactionsByID, w.toolOrder = map[string]*toolCall{}, map[string]string{}, nil
	fmt.Fprintf(&w.section, "\n## Run %s\n\n", w.scrub(cmp.Or(string(ev.RunID), "(none)")))
}

// event writes one event of the current run.
func (w *logWriter) event(ev Event) {
	en, err := chatlog.Decode(ev.Type, ev.Payload)
	if err != nil {
		fmt.Fprintf(&w.section, "*An event (%s) that could not be read.*\n\n", w.scrub(ev.Type))
		return
	}
	a := en.Agent
	switch a.Type {
	case agent.EventAssistantDelta:
		w.endReasoning()
		w.text.WriteString(a.Text)
		w.sawText = true
		return
	case agent.EventReasoningDelta:
		w.endText()
		w.reasoning.WriteString(a.Text)
		return
	case agent.EventToolOutput:
		if t := w.toolOf(a.Tool); t != nil {
			t.write(a.Text, w.part)
		}
		return
	case agent.EventUsageUpdated:
		if a.Usage != nil {
			w.usage = a.Usage
		}
		return
	case agent.EventSessionUpdated, agent.EventPlanUpdated, agent.EventProviderNative:
		return
	}
	w.endText()
	w.endReasoning()
	switch {
	case en.User != nil:
		fmt.Fprintf(&w.section, "**Prompt** by %s at %s:\n\n", w.scrub(cmp.Or(en.User.By, "someone")), stamp(ev.At))
		w.quote(w.scrub(en.User.Text))
		if en.User.Images > 0 {
			fmt.Fprintf(&w.section, "*(with %s)*\n\n", plural(en.User.Images, "image"))
		}
	case en.Run != nil:
		fmt.Fprintf(&w.section, "*Started at %s by %s: agent %s, model %s.*\n\n", stamp(ev.At), w.scrub(cmp.Or(en.Run.By, "someone")),
			w.scrub(en.Run.Agent), w.scrub(cmp.Or(en.Run.Model, "default")))
	case a.Type == agent.EventToolStarted:
		w.toolStarted(a.Tool)
	case a.Type == agent.EventToolCompleted:
		w.toolCompleted(a.Tool)
	case a.Type == agent.EventInteractionRequested && a.Interaction != nil:
		w.interaction(a.Interaction)
	case a.Type == agent.EventInteractionResolved && a.Resolution != nil:
		r := a.Resolution
		what := cmp.Or(w.interactionsByID[r.InteractionID], "Request "+r.InteractionID)
		fmt.Fprintf(&w.section, "**%s: %s**", w.scrub(what), w.scrub(strings.ReplaceAll(r.Status, "_", " ")))
		if r.By != "" {
			fmt.Fprintf(&w.section, " by %s", w.scrub(r.By))
		}
		fmt.Fprintf(&w.section, " at %s.\n\n", stamp(ev.At))
	case a.Type == agent.EventSystem:
		w.system(a)
	case a.Type.Terminal():
		if a.Type == agent.EventRunCompleted && !w.sawText && a.Text != "" {
			w.section.WriteString(w.scrub(a.Text) + "\n\n")
		}
		if a.Usage != nil {
			w.usage = a.Usage
		}
		w.end(a, ev.At)
	}
}

// toolOf returns the call t refers to (nil when none).
func (w *logWriter) toolOf(t *agent.Tool) *toolCall {
	if t == nil {
		return nil
	}
	return w.tools[t.ID]
}

func (w *logWriter) toolStarted(t *agent.Tool) {
	if t == nil {
		return
	}
	input := string(t.Input)
	if len(t.Input) > 0 {
		var v any
		if json.Unmarshal(t.Input, &v) == nil {
			if b, err := json.MarshalIndent(v, "", "  "); err == nil {
				input = string(b)
			}
		}
	}
	w.tools[t.ID] = &toolCall{name: t.Name}
	w.toolOrder = append(w.toolOrder, t.ID)
	fmt.Fprintf(&w.section, "### Tool call: %s\n\n", w.scrub(cmp.Or(t.Name, "(unnamed)")))
	if t.Summary != "" {
		fmt.Fprintf(&w.section, "%s\n\n", w.scrub(oneLine(t.Summary)))
	}
	if input != "" {
		w.section.WriteString("Input:\n\n")
		w.fence("json", w.bounded(input, 0))
	}
}

func (w *logWriter) toolCompleted(t *agent.Tool) {
	if t == nil {
		return
	}
	call := w.tools[t.ID]
	if call == nil {
		call = &toolCall{name: t.Name}
		w.tools[t.ID] = call
	}
	call.done = true
	out, extra := call.out.String(), call.extra
	if t.Output != "" {
		out, extra = t.Output, 0
	}
	label := "Output"
	if t.IsError {
		label = "Output (an error)"
	}
	fmt.Fprintf(&w.section, "%s of %s:\n\n", label, w.scrub(cmp.Or(call.name, t.Name, "the tool")))
	if out == "" {
		w.section.WriteString("*(none)*\n\n")
		return
	}
	w.fence("", w.bounded(out, extra))
}

func (w *logWriter) interaction(in *agent.Interaction) {
	what := "Approval"
	if in.Kind == agent.KindQuestion {
		what = "Question"
	}
	w.interactionsByID[in.ID] = what
	var b strings.Builder
	fmt.Fprintf(&b, "**%s requested**", what)
	if in.Title != "" {
		fmt.Fprintf(&b, ": %s", oneLine(in.Title))
	}
	b.WriteString("\n\n")
	if in.Reason != "" {
		fmt.Fprintf(&b, "%s\n\n", oneLine(in.Reason))
	}
	w.section.WriteString(w.scrub(b.String()))
	if in.Command != "" {
		w.fence("sh", w.bounded(in.Command, 0))
	}
	if in.Diff != "" {
		w.fence("diff", w.bounded(in.Diff, 0))
	}
	for _, q := range in.Questions {
		fmt.Fprintf(&w.section, "- %s", w.scrub(oneLine(cmp.Or(q.Text, q.Header))))
		if len(q.Options) > 0 {
			fmt.Fprintf(&w.section, " (%s)", w.scrub(strings.Join(q.Options, ", ")))
		}
		if q.Secret {
			w.section.WriteString(" (secret: its answer is never shown)")
		}
		w.section.WriteString("\n")
	}
	if len(in.Questions) > 0 {
		w.section.WriteString("\n")
	}
}

func (w *logWriter) system(a agent.Event) {
	switch {
	case a.Subtype == agent.SubtypeWorkspace && a.Change != nil:
		if a.Change.Branch != "" {
			w.branch = a.Change.Branch
		}
		fmt.Fprintf(&w.section, "*Workspace: %s.*\n\n", w.scrub(a.Change.String()))
	case a.Text != "":
		fmt.Fprintf(&w.section, "*System (%s): %s*\n\n", w.scrub(cmp.Or(a.Subtype, "note")), w.scrub(oneLine(a.Text)))
	}
}

// end writes the run's end: status, duration, tokens and cost.
func (w *logWriter) end(a agent.Event, at time.Time) {
	w.unreturned()
	status := map[agent.EventType]string{agent.EventRunCompleted: "completed", agent.EventRunFailed: "failed", agent.EventRunInterrupted: "interrupted"}[a.Type]
	fmt.Fprintf(&w.section, "**Run %s**", status)
	if a.Type == agent.EventRunFailed && a.Text != "" {
		fmt.Fprintf(&w.section, ": %s", w.scrub(oneLine(a.Text)))
	}
	var facts []string
	switch {
	case w.usage != nil && w.usage.DurationMS > 0:
		facts = append(facts, "in "+(time.Duration(w.usage.DurationMS)*time.Millisecond).Round(100*time.Millisecond).String())
	case !w.started.IsZero() && !at.IsZero():
		facts = append(facts, "in "+at.Sub(w.started).Round(100*time.Millisecond).String())
	}
	if u := w.usage; u != nil {
		if u.InputTokens+u.OutputTokens > 0 {
			facts = append(facts, fmt.Sprintf("%d tokens in, %d out", u.InputTokens, u.OutputTokens))
		}
		if u.CostUSD > 0 {
			facts = append(facts, fmt.Sprintf("$%.4f", u.CostUSD))
		}
	}
	if len(facts) > 0 {
		w.section.WriteString(" " + strings.Join(facts, " · "))
	}
	fmt.Fprintf(&w.section, " at %s.\n", stamp(at))
	w.open = false
}

// unreturned says the run's tool calls that never returned.
func (w *logWriter) unreturned() {
	for _, id := range w.toolOrder {
		if t := w.tools[id]; t != nil && !t.done {
			fmt.Fprintf(&w.section, "*%s never returned.*\n\n", w.scrub(cmp.Or(t.name, "A tool call")))
			t.done = true
		}
	}
}

// endRun closes a run that has no terminal event (still running, or its
// end was lost).
func (w *logWriter) endRun() {
	if !w.open {
		return
	}
	w.endText()
	w.endReasoning()
	w.unreturned()
	w.section.WriteString("*The run has not ended (it is still running, or its end was not recorded).*\n")
	w.open = false
}

func (w *logWriter) endText() {
	if w.text.Len() == 0 {
		return
	}
	w.section.WriteString(strings.TrimSpace(w.scrub(w.text.String())) + "\n\n")
	w.text.Reset()
}

func (w *logWriter) endReasoning() {
	if w.reasoning.Len() == 0 {
		return
	}
	w.section.WriteString("*Reasoning:*\n\n")
	w.quote(w.scrub(w.reasoning.String()))
	w.reasoning.Reset()
}

// quote writes s as a block quote.
func (w *logWriter) quote(s string) {
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		w.section.WriteString(strings.TrimRight("> "+line, " ") + "\n")
	}
	w.section.WriteString("\n")
}

// bounded scrubs s and cuts it to the part bound, saying the cut; extra is
// how many bytes s lost already.
func (w *logWriter) bounded(s string, extra int) string {
	s = w.scrub(s)
	if len(s) <= w.part && extra == 0 {
		return s
	}
	n := min(w.part, len(s))
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("\n[cut: %d bytes, the first %d shown]", len(s)+extra, n)
}

// fence writes s in a code fence longer than any run of backticks in it, so
// that no content closes it.
func (w *logWriter) fence(info, s string) {
	f := strings.Repeat("`", max(3, longestRun(s, '`')+1))
	w.section.WriteString(f + info + "\n" + s)
	if !strings.HasSuffix(s, "\n") {
		w.section.WriteString("\n")
	}
	w.section.WriteString(f + "\n\n")
}

// longestRun is the length of the longest run of c in s.
func longestRun(s string, c byte) int {
	best, n := 0, 0
	for i := range len(s) {
		if s[i] == c {
			n++
			best = max(best, n)
			continue
		}
		n = 0
	}
	return best
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func stamp(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}
