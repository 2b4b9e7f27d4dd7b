// Tests of the pure fold from a run's events to its message views.

package render_test

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/chatlog"
	"github.com/threadline-bot/threadline/chatops/render"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// log builds a run's events as the prompt service persists them.
type log struct {
	chatID agent.ChatID
	runID  agent.RunID
	seq    int64
	evs    []render.Event
}

func (l *log) add(at time.Duration, payload any) {
	b, err := json.Marshal(payload)
	if err != nil {
		panic(err)
	}
	var typ string
	switch p := payload.(type) {
	case chatlog.RunStarted:
		typ = string(p.Type)
	case agent.Event:
		typ = string(p.Type)
	}
	l.seq++
	l.evs = append(l.evs, render.Event{ChatID: l.chatID, Seq: l.seq, RunID: l.runID, Type: typ, Payload: b, At: t0.Add(at)})
}

func sampleRun() *log {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude", Model: "opus"})
	l.add(time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "Let me look.\n"})
	l.add(2*time.Second, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Edit", Summary: "Edit: main.go", Input: []byte(`{"file_path":"main.go"}`)}})
	l.add(3*time.Second, agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Edit"}})
	l.add(4*time.Second, agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t2", Name: "Bash", Summary: "Bash: go test"}})
	l.add(5*time.Second, agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t2", Name: "Bash", IsError: true}})
	l.add(6*time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "Fixed main.go."})
	l.add(7*time.Second, agent.Event{Type: agent.EventUsageUpdated, Usage: &agent.Usage{InputTokens: 1200, OutputTokens: 5}})
	l.add(12*time.Second, agent.Event{Type: agent.EventRunCompleted})
	return l
}

func TestRunViews(t *testing.T) {
	l := sampleRun()
	r := render.NewRun(render.RenderOptions{}, agent.ChatID(l.chatID), agent.RunID(l.runID), "proj")
	for _, ev := range l.evs[:len(l.evs)-1] {
		r.Apply(ev)
	}
	if r.Done() || r.RunID() != "r1" || r.FirstSeq() != 1 || r.LastSeq() != 8 {
		t.Fatalf("done %v run %q seqs %d..%d", r.Done(), r.RunID(), r.FirstSeq(), r.LastSeq())
	}
	live := r.Views()
	if len(live) != 1 || live[0].Slot != "answer/0" || live[0].Final || live[0].Priority != render.PriorityProgress {
		t.Fatalf("live views %+v", live)
	}
	v := live[0].View
	if v.Status != "claude · opus · proj · 7s" {
		t.Errorf("status %q", v.Status)
	}
	if want := []string{"✓ Edit: main.go", "✗ Bash: go test"}; strings.Join(v.Steps, "|") != strings.Join(want, "|") {
		t.Errorf("steps %q", v.Steps)
	}
	if len(v.Buttons) != 1 || v.Buttons[0].ID != render.ButtonStop {
		t.Fatalf("buttons %+v", v.Buttons)
	}
	ref, err := render.DecodeRef(v.Buttons[0].Value)
	if err != nil || ref.ChatID != "c1" || ref.RunID != "r1" {
		t.Fatalf("stop ref %+v, %v", ref, err)
	}

	r.Apply(l.evs[len(l.evs)-1])
	if !r.Done() {
		t.Fatal("not done after run.completed")
	}
	end := r.Views()
	if len(end) != 1 || !end[0].Final || end[0].Priority != render.PriorityFinal {
		t.Fatalf("final views %+v", end)
	}
	v = end[0].View
	// The text after the tool calls is its own paragraph; the steps stay in
	// the final message; the duration is in the footer only.
	if v.Body != "Let me look.\n\nFixed main.go." || len(v.Buttons) != 0 || strings.Join(v.Steps, "|") != "✓ Edit: main.go|✗ Bash: go test" {
		t.Errorf("final view %+v", v)
	}
	if v.Status != "claude · opus · proj" || v.Activity != "" {
		t.Errorf("final status %q, activity %q", v.Status, v.Activity)
	}
	if want := "Done in 12s · 1,200 in / 5 out tokens · 1 file changed"; v.Footer != want {
		t.Errorf("footer %q, want %q", v.Footer, want)
	}
}

// The same events give the same views, whether folded live one at a time or
// replayed at once, and whenever they are rendered: nothing but the events
// counts (no clock).
func TestReplayIsLive(t *testing.T) {
	l := sampleRun()
	r := render.NewRun(render.RenderOptions{}, agent.ChatID(l.chatID), agent.RunID(l.runID), "proj")
	for _, ev := range l.evs {
		r.Apply(ev)
		_ = r.Views() // rendering in between changes nothing
	}
	live := r.Views()
	// Events of other runs and chat-level events are left out of the replay.
	other := &log{chatID: "c1", runID: "r0"}
	other.add(0, agent.Event{Type: agent.EventAssistantDelta, Text: "older run"})
	all := append([]render.Event{{ChatID: "c1", Seq: 0, Type: chatlog.TypeUserMessage, Payload: []byte(`{"text":"hi"}`)}}, l.evs...)
	all = append(all, other.evs...)
	replay := render.RenderRun("c1", "proj", render.RenderOptions{}, all)
	if len(replay) != len(live) {
		t.Fatalf("%d replayed views, %d live", len(replay), len(live))
	}
	for i := range live {
		if replay[i].View.Hash() != live[i].View.Hash() || replay[i].Slot != live[i].Slot {
			t.Errorf("view %d differs:\nreplay %+v\nlive   %+v", i, replay[i], live[i])
		}
	}
	if got := render.RenderRun("c1", "", render.RenderOptions{}, nil); got != nil {
		t.Errorf("views of no events: %+v", got)
	}
}

func TestCardsAndInterrupt(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "codex"})
	l.add(time.Second, agent.Event{Type: agent.EventInteractionRequested, Interaction: &agent.Interaction{ID: "q1", Kind: agent.KindCommandApproval, Command: "make deploy"}})
	r := render.NewRun(render.RenderOptions{Mention: func(by string) string { return "<" + by + ">" }}, "c1", "r1", "")
	for _, ev := range l.evs {
		r.Apply(ev)
	}
	cards := r.Cards()
	if len(cards) != 1 || !cards[0].Pending || cards[0].Interaction.ID != "q1" || !cards[0].At.Equal(t0.Add(time.Second)) {
		t.Fatalf("cards %+v", cards)
	}
	vs := r.Views()
	if len(vs) != 2 || vs[1].Slot != "card/q1" || vs[1].Priority != render.PriorityCard || vs[1].Final {
		t.Fatalf("views %+v", vs)
	}
	card := vs[1].View
	code := render.CardCode("r1", "q1")
	if len(code) != render.CardCodeLen || !strings.Contains(card.Body, "make deploy") || !strings.Contains(card.Body, "approve "+code) {
		t.Errorf("card body %q (code %s)", card.Body, code)
	}
	var ids []string
	for _, b := range card.Buttons {
		ids = append(ids, b.ID)
		ref, err := render.DecodeRef(b.Value)
		if err != nil || ref.InteractionID != "q1" || ref.Decision == "" {
			t.Errorf("button %s ref %+v, %v", b.ID, ref, err)
		}
	}
	if want := []string{render.ButtonApprove, render.ButtonApproveSession, render.ButtonDecline, render.ButtonCancel}; strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Errorf("card buttons %v", ids)
	}

	l.add(2*time.Second, agent.Event{Type: agent.EventInteractionResolved, Resolution: &agent.Resolution{InteractionID: "q1", Status: agent.StatusDeclined, By: "slack:U1"}})
	r.Apply(l.evs[len(l.evs)-1])
	if c := r.Cards(); c[0].Pending {
		t.Error("a resolved card is still pending")
	}
	card = r.Views()[1].View
	if !r.Views()[1].Final || len(card.Buttons) != 0 || !strings.Contains(card.Body, "**Declined** by <slack:U1>") {
		t.Errorf("resolved card %+v", card)
	}

	r.Interrupt("the bot restarted before the run ended")
	if !r.Done() {
		t.Fatal("not done after Interrupt")
	}
	if f := r.Views()[0].View.Footer; f != "Stopped after 2s: the bot restarted before the run ended" {
		t.Errorf("footer %q", f)
	}
}

func TestLongAnswerIsUploaded(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	body := strings.Repeat("A paragraph of the answer.\n\n", 40)
	l.add(0, agent.Event{Type: agent.EventAssistantDelta, Text: body})
	opts := render.RenderOptions{PartLimit: 200, MaxParts: 2}
	vs := render.RenderRun("c1", "", opts, l.evs)
	if len(vs) != 2 || !strings.Contains(strings.Join(vs[1].View.Steps, "\n"), "attached when the run ends") || strings.Contains(vs[1].View.Body, "attached") {
		t.Fatalf("live views %+v", vs)
	}
	l.add(time.Second, agent.Event{Type: agent.EventRunCompleted})
	vs = render.RenderRun("c1", "", opts, l.evs)
	if len(vs) != 3 || vs[2].Slot != render.SlotFile || vs[2].Upload != body || !vs[2].Final || !strings.HasSuffix(vs[1].View.Footer, " · the whole answer (1120 bytes) is attached as answer.md") {
		t.Fatalf("final views %+v", vs)
	}
	for i, sv := range vs[:2] {
		if k, ok := render.AnswerIndex(sv.Slot); !ok || k != i || !render.IsAnswer(sv.Slot) {
			t.Errorf("slot %q", sv.Slot)
		}
		if len(sv.View.Body) > 200+200 {
			t.Errorf("part %d is %d bytes", i, len(sv.View.Body))
		}
	}
	if _, ok := render.AnswerIndex(render.SlotFile); ok || render.IsAnswer("card/answer/1") {
		t.Error("a non-answer slot is taken for an answer")
	}
}

func TestBadRef(t *testing.T) {
	for _, v := range []string{"", "!!", "e30"} { // e30 is "{}": no chat id
		if _, err := render.DecodeRef(v); err == nil {
			t.Errorf("DecodeRef(%q) succeeded", v)
		}
	}
}

// TestPure keeps the renderer a pure fold: no package that does I/O, and no
// clock but the events' times.
func TestPure(t *testing.T) {
	banned := map[string]bool{"os": true, "io": true, "io/fs": true, "net": true, "net/http": true, "log": true,
		"log/slog": true, "sync": true, "math/rand": true, "math/rand/v2": true, "os/exec": true, "database/sql": true}
	clock := map[string]bool{"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true, "AfterFunc": true,
		"NewTimer": true, "NewTicker": true, "Tick": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if banned[p] {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" && clock[sel.Sel.Name] {
					t.Errorf("%s reads the clock: time.%s", name, sel.Sel.Name)
				}
			}
			return true
		})
	}
	if checked < 3 {
		t.Fatalf("checked %d files", checked)
	}
}

// TestVersionNoticeShown: the prompt service's one-line notice that the CLI
// is outside its verified versions shows in the run's message.
func TestVersionNoticeShown(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude"})
	l.add(time.Second, agent.Event{Type: agent.EventSystem, Subtype: "version_notice", Text: "claude 9.9.9 is not a verified version (verified: 2.1.328)"})
	l.add(2*time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "hello"})
	r := render.NewRun(render.RenderOptions{}, "c1", "r1", "")
	for _, ev := range l.evs {
		r.Apply(ev)
	}
	var all strings.Builder
	for _, v := range r.Views() {
		all.WriteString(v.View.Body + "\n" + strings.Join(v.View.Steps, "\n") + "\n" + v.View.Footer + "\n")
	}
	if !strings.Contains(all.String(), "9.9.9 is not a verified version") {
		t.Errorf("no version notice in %q", all.String())
	}
}

// TestWorkspaceFooter: a turn's system/workspace event puts what it changed
// and the branch in the final footer, with View diff, Push and Open PR under
// the answer (no Stop); a run without one keeps its own file count.
func TestWorkspaceFooter(t *testing.T) {
	l := &log{chatID: "c1", runID: "r1"}
	l.add(0, chatlog.RunStarted{Type: agent.EventRunStarted, Agent: "claude"})
	l.add(time.Second, agent.Event{Type: agent.EventAssistantDelta, Text: "fixed"})
	l.add(2*time.Second, agent.Event{Type: agent.EventSystem, Subtype: agent.SubtypeWorkspace,
		Change: &agent.Change{Branch: "threadline/fix-flaky-test-1a2b3c4d", Files: 3, Insertions: 40, Deletions: 2}})
	l.add(3*time.Second, agent.Event{Type: agent.EventRunCompleted})
	r := render.NewRun(render.RenderOptions{}, "c1", "r1", "")
	for _, ev := range l.evs {
		r.Apply(ev)
	}
	views := r.Views()
	last := views[len(views)-1].View
	if !strings.Contains(last.Footer, "3 files changed, +40 \u22122 · threadline/fix-flaky-test-1a2b3c4d") {
		t.Errorf("footer %q", last.Footer)
	}
	var ids []string
	for _, b := range last.Buttons {
		ids = append(ids, b.ID)
		if ref, err := render.DecodeRef(b.Value); err != nil || ref.ChatID != "c1" {
			t.Errorf("button %s value %q: %v", b.ID, b.Value, err)
		}
	}
	if strings.Join(ids, ",") != render.ButtonDiff+","+render.ButtonPush+","+render.ButtonPR {
		t.Errorf("buttons %v", ids)
	}
}
