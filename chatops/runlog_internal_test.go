// runlog_internal_test.go: the log command's Markdown: prompts, text, tool
// calls with their input and output, interactions, the run's end; secrets
// scrubbed; fences no content closes; the bounds.

package chatops

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/agentcore/redact"
)

const logSecret = "sk-live-0123456789abcdefSECRET"

// logEvents is a chat's log: one run with a prompt, a tool call whose output
// holds a secret and a fence, an approval, text and an end; a second run that
// failed.
func logEvents(t *testing.T, output string) []Event {
	t.Helper()
	at := time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)
	var out []Event
	add := func(run agent.RunID, typ string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Event{ChatID: "c1", Seq: int64(len(out) + 1), RunID: run, Type: typ, Payload: b, At: at.Add(time.Duration(len(out)) * time.Second)})
	}
	ev := func(run agent.RunID, e agent.Event) { add(run, string(e.Type), e) }
	add("r1", chatlog.TypeUserMessage, chatlog.UserMessage{Text: "list the files\nplease", By: "slack:U1"})
	add("r1", chatlog.TypeRunStarted, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude", Model: "opus", By: "slack:U1"})
	ev("r1", agent.Event{Type: agent.EventAssistantDelta, Text: "Let me "})
	ev("r1", agent.Event{Type: agent.EventAssistantDelta, Text: "look."})
	ev("r1", agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Summary: "Bash: ls -la", Input: json.RawMessage(`{"command":"ls -la"}`)}})
	ev("r1", agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: output})
	ev("r1", agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash"}})
	ev("r1", agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "i1", Kind: agent.KindCommandApproval, Title: "Run a command", Command: "rm -rf build"}})
	ev("r1", agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "i1", Status: agent.StatusApproved, Decision: agent.DecisionApprove, By: "slack:U2"}})
	ev("r1", agent.Event{Type: agent.EventAssistantDelta, Text: "Done: two files."})
	ev("r1", agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 1200, OutputTokens: 34, CostUSD: 0.0123, DurationMS: 4200}})
	ev("r1", agent.Event{Type: agent.EventRunCompleted})
	add("r2", chatlog.TypeUserMessage, chatlog.UserMessage{Text: "again", By: "slack:U1"})
	ev("r2", agent.Event{Type: agent.EventRunFailed, Text: "the CLI exited with status 1"})
	return out
}

func TestLogRendering(t *testing.T) {
	t.Parallel()
	output := "a.txt\ntoken=" + logSecret + "\n```\n# not a heading, still output\n````\n"
	t.Run("content", func(t *testing.T) {
		t.Parallel()
		w := logWriter{max: LogMaxBytes, part: LogMaxPart, redact: redact.New(logSecret)}
		doc, runs := w.render("c1", logEvents(t, output))
		if runs != 2 {
			t.Errorf("%d runs, want 2", runs)
		}
		logHas(t, doc,
			"# Log of chat c1",
			"## Run r1",
			"**Prompt** by slack:U1 at 2026-12-07 14:00:00 UTC:\n\n> list the files\n> please\n",
			"agent claude, model opus",
			"Let me look.\n",
			"### Tool call: Bash\n\nBash: ls -la\n\nInput:\n\n```json\n{\n  \"command\": \"ls -la\"\n}\n```\n",
			"Output of Bash:\n\n`````\na.txt\ntoken=[redacted]\n```\n# not a heading, still output\n````\n`````\n",
			"**Approval requested**: Run a command",
			"```sh\nrm -rf build\n```",
			"**Approval: approved** by slack:U2",
			"Done: two files.",
			"**Run completed** in 4.2s · 1200 tokens in, 34 out · $0.0123",
			"## Run r2",
			"**Run failed**: the CLI exited with status 1",
		)
		if strings.Contains(doc, logSecret) {
			t.Errorf("the secret is in the log:\n%s", doc)
		}
		if strings.Index(doc, "## Run r1") > strings.Index(doc, "Let me look.") || strings.Index(doc, "Let me look.") > strings.Index(doc, "### Tool call") ||
			strings.Index(doc, "### Tool call") > strings.Index(doc, "Done: two files.") {
			t.Errorf("out of order:\n%s", doc)
		}
		// Outside the fences nothing of the output is a heading.
		if strings.Contains(doc, "\n# not a heading") && !fenced(doc, "# not a heading") {
			t.Errorf("the output broke out of its fence:\n%s", doc)
		}
	})
	t.Run("a tool output over the part bound is cut, the cut said", func(t *testing.T) {
		t.Parallel()
		w := logWriter{max: LogMaxBytes, part: 100, redact: redact.New(logSecret)}
		doc, _ := w.render("c1", logEvents(t, strings.Repeat("é", 300)))
		if !strings.Contains(doc, "[cut: 600 bytes, the first 100 shown]") {
			t.Errorf("no cut said:\n%s", doc)
		}
		if strings.Contains(doc, strings.Repeat("é", 51)) {
			t.Errorf("more than the bound shown:\n%s", doc)
		}
	})
	t.Run("a streamed tool output over the part bound keeps only what it shows", func(t *testing.T) {
		t.Parallel()
		w := logWriter{max: LogMaxBytes, part: 100}
		w.begin("c1")
		evs := logEvents(t, "")
		for _, ev := range evs[:5] {
			w.add(ev)
		}
		chunk, _ := json.Marshal(agent.Event{Type: agent.EventToolOutput, Tool: &agent.Tool{ID: "t1"}, Text: strings.Repeat("x", 10_000)})
		for range 100 {
			w.add(Event{RunID: "r1", Type: string(agent.EventToolOutput), Payload: chunk})
		}
		if n := w.tools["t1"].out.Len(); n > 100+4096 {
			t.Errorf("%d bytes of output kept", n)
		}
		for _, ev := range evs[6:] {
			w.add(ev)
		}
		doc, _ := w.finish()
		if !strings.Contains(doc, "[cut: 1000000 bytes, the first 100 shown]") {
			t.Errorf("no cut said:\n%s", doc)
		}
	})
	t.Run("the whole file is bounded, the cut said", func(t *testing.T) {
		t.Parallel()
		w := logWriter{max: 600, part: LogMaxPart}
		doc, _ := w.render("c1", logEvents(t, output))
		if len(doc) > 600+200 || !strings.Contains(doc, "*The log is cut here: it passed 600 bytes.") {
			t.Errorf("%d bytes, or no cut said:\n%s", len(doc), doc)
		}
		if strings.Contains(doc, "## Run r2") {
			t.Errorf("the second run is past the cut:\n%s", doc)
		}
	})
	t.Run("a run without its end", func(t *testing.T) {
		t.Parallel()
		w := logWriter{max: LogMaxBytes, part: LogMaxPart}
		evs := logEvents(t, "x")
		doc, _ := w.render("c1", evs[:5])
		if !strings.Contains(doc, "*The run has not ended") || !strings.Contains(doc, "*Bash never returned.*") || !strings.Contains(doc, "Let me look.") {
			t.Errorf("no open end said:\n%s", doc)
		}
	})
}

// render writes the events and returns the document and how many runs it
// holds.
func (w *logWriter) render(chatID agent.ChatID, events []Event) (string, int) {
	w.begin(chatID)
	for _, ev := range events {
		if !w.add(ev) {
			break
		}
	}
	return w.finish()
}

// fenced reports whether every line of doc that starts with s lies inside a
// code fence (a fence closes only on a line of at least its own backticks).
func fenced(doc, s string) bool {
	open := 0
	for line := range strings.SplitSeq(doc, "\n") {
		n := longestRun(line, '`')
		switch {
		case open == 0 && strings.HasPrefix(line, "```"):
			open = len(line) - len(strings.TrimLeft(line, "`"))
			continue
		case open > 0 && strings.TrimRight(line, "`") == "" && n >= open:
			open = 0
			continue
		}
		if strings.HasPrefix(line, s) && open == 0 {
			return false
		}
	}
	return true
}

func TestLongestRun(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]int{"": 0, "a": 0, "`": 1, "a``b```c": 3, "````": 4} {
		if got := longestRun(s, '`'); got != want {
			t.Errorf("longestRun(%q) = %d, want %d", s, got, want)
		}
	}
}

// logHas fails t for each of wants that doc lacks.
func logHas(t *testing.T, doc string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(doc, w) {
			t.Errorf("the log lacks %q:\n%s", w, doc)
		}
	}
}
