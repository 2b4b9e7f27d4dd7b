package matrix_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/bot/matrix"
	"github.com/threadline-bot/threadline/chatops"
)

// twentyKB is an answer of 20,000 bytes of ordinary Markdown.
func twentyKB() (pieces []string, whole string) { return answerOf(20000) }

// answerOf is an answer of n bytes of ordinary Markdown (paragraphs with
// some bold, code and links, a list now and then) in pieces of about 500
// bytes, as an agent streams it.
func answerOf(n int) (pieces []string, whole string) {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Paragraph %03d of the answer has a **bold** word, a `code` span and a [link](https://example.org/%d), "+
			"then plain words that go on for a while, as prose does.\n\n", i, i)
		if i%5 == 4 {
			b.WriteString("- a list item\n- another item\n\n")
		}
	}
	whole = b.String()[:n]
	for len(whole[len(strings.Join(pieces, "")):]) > 0 {
		rest := whole[len(strings.Join(pieces, "")):]
		pieces = append(pieces, rest[:min(500, len(rest))])
	}
	return pieces, whole
}

// storedSize is the size of an event as the homeserver serves it (the
// client form of the PDU, with its unsigned data), with HTML characters
// unescaped as in the canonical JSON the size limit applies to.
func (h *human) storedSize(room id.RoomID, evt id.EventID) int {
	h.t.Helper()
	raw, err := h.cli.MakeRequest(h.t.Context(), "GET", h.cli.BuildClientURL("v3", "rooms", room, "event", evt), nil, nil)
	if err != nil {
		h.t.Fatalf("get event %s: %v", evt, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		h.t.Fatal(err)
	}
	return canonicalSize(v)
}

// canonicalSize is the size of v's JSON with HTML characters not escaped.
func canonicalSize(v any) int {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return buf.Len() - 1
}

// contentSize is the canonical size of an event's content (HTML not escaped).
func contentSize(e *event.Event) int { return canonicalSize(e.Content.Raw) }

// TestTwentyKBAnswerIsOneEvent: a 20 KB answer streamed in 40 pieces is one
// message in the thread, edited in place up to its whole text with its HTML
// body; every edit stays within max_event_bytes; progress edits are spaced by
// the budget's MinInterval.
func TestTwentyKBAnswerIsOneEvent(t *testing.T) {
	twentyKBFlow(t, false)
}

// twentyKBFlow streams a 20 KB answer; in an encrypted room the message may
// go without its HTML (the Megolm ciphertext is a third larger), but it is
// still one message with the whole text, and Dendrite took every edit.
func twentyKBFlow(t *testing.T, encrypted bool) {
	w, alice, _, room := started(t, "sqlite", encrypted)
	bot := w.botUser.ID
	pieces, whole := twentyKB()
	w.prov.add(script{before: pieces, pause: 40 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": write 20 KB", bot)
	evs := alice.wait("the whole answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Paragraph 000")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	posts := botPosts(evs, bot, room, root)
	if len(posts) != 1 {
		t.Fatalf("%d messages for a %d-byte answer, want 1:\n%s", len(posts), len(whole), dump(evs))
	}
	final := current(evs, posts[0])
	if !strings.Contains(final.Body, whole) {
		t.Fatalf("the message does not hold the whole answer (%d bytes of body)", len(final.Body))
	}
	lastPara := whole[strings.LastIndex(whole, "Paragraph "):][:len("Paragraph 000")]
	if !encrypted && (final.Format != event.FormatHTML || !strings.Contains(final.FormattedBody, "<strong>bold</strong>") || !strings.Contains(final.FormattedBody, lastPara)) {
		t.Errorf("the final message lost its HTML (%d bytes)", len(final.FormattedBody))
	}
	edits := editsOf(evs, posts[0].ID)
	biggest := 0
	for i, e := range edits {
		n := contentSize(e)
		biggest = max(biggest, n)
		if n > matrix.DefaultMaxEventBytes && !encrypted {
			t.Errorf("edit %d is %d bytes of content, over max_event_bytes %d", i, n, matrix.DefaultMaxEventBytes)
		}
	}
	// Progress edits (all but the final one) go out MinInterval apart. The
	// server stamps an edit when it arrives, so one request slower on its
	// way (a loaded machine) makes one gap short and the one before it
	// long: check the pace over the progress edits, and that no two came
	// in a burst.
	if progress := edits[:max(len(edits)-1, 0)]; len(progress) > 1 {
		span := time.Duration(progress[len(progress)-1].Timestamp-progress[0].Timestamp) * time.Millisecond
		if want := time.Duration(len(progress)-1) * minInterval * 2 / 3; span < want {
			t.Errorf("%d progress edits in %s, want at least %s (budget %s each)", len(progress), span, want, minInterval)
		}
		for i := 1; i < len(progress); i++ {
			if gap := time.Duration(progress[i].Timestamp-progress[i-1].Timestamp) * time.Millisecond; gap < minInterval/4 {
				t.Errorf("edits %d and %d are %s apart, budget %s", i-1, i, gap, minInterval)
			}
		}
	}
	// As stored: the ciphertext in an encrypted room.
	stored := 0
	for _, e := range edits {
		stored = max(stored, alice.storedSize(room, e.ID))
	}
	if stored > matrix.DefaultMaxEventBytes+1024 {
		t.Errorf("an edit is %d bytes stored, over max_event_bytes %d", stored, matrix.DefaultMaxEventBytes)
	}
	t.Logf("a %d-byte answer (encrypted %v): 1 message, %d edits, largest edit content %d bytes, largest edit stored as %d bytes, HTML kept %v (max_event_bytes %d, part limit %d)",
		len(whole), encrypted, len(edits), biggest, stored, final.FormattedBody != "", matrix.DefaultMaxEventBytes, matrix.PartLimit(0))
}

// TestLargestEvents: with max_event_bytes at its largest (64,512), a
// message of a whole part (27 KB of answer) with its HTML is one event that
// Dendrite takes: the allowance for what the homeserver adds is enough.
func TestLargestEvents(t *testing.T) {
	w := newWorld(t, "sqlite")
	w.maxEventBytes = matrix.MaxEventBytesLimit
	w.startBot(false)
	alice, bob := w.human(w.alice, false), w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bot := w.botUser.ID
	limit := matrix.PartLimit(matrix.MaxEventBytesLimit)
	pieces, whole := answerOf(limit - 100)
	w.prov.add(script{before: pieces, pause: 10 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": write a lot", bot)
	evs := alice.wait("the whole answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "Paragraph 000")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	posts := botPosts(evs, bot, room, root)
	if len(posts) != 1 || !strings.Contains(current(evs, posts[0]).Body, whole) {
		t.Fatalf("%d messages for a %d-byte answer (part limit %d)", len(posts), len(whole), limit)
	}
	edits := editsOf(evs, posts[0].ID)
	last := edits[len(edits)-1]
	stored := alice.storedSize(room, last.ID)
	if stored > matrix.HardEventLimit-500 || current(evs, posts[0]).FormattedBody == "" {
		t.Errorf("the final edit is %d bytes stored (HTML %d bytes)", stored, len(current(evs, posts[0]).FormattedBody))
	}
	t.Logf("a %d-byte answer at max_event_bytes %d: final edit %d bytes of content, %d stored", len(whole), matrix.MaxEventBytesLimit, contentSize(last), stored)
}

// TestLongAnswerContinues: an answer longer than one message continues in
// follow-up messages in the thread, each within max_event_bytes, together
// the whole text in order.
func TestLongAnswerContinues(t *testing.T) {
	w, alice, _, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	var parts []string
	for i := range 60 {
		parts = append(parts, fmt.Sprintf("Paragraph %02d: %s\n\n", i, strings.Repeat("lorem ipsum ", 100)))
	}
	w.prov.add(script{before: parts, pause: 20 * time.Millisecond}.turn)
	root := alice.say(room, "", w.botUser.Name+": write a lot", bot)
	evs := alice.wait("the whole answer", waitLong, func(evs []*event.Event) bool {
		posts := botPosts(evs, bot, room, root)
		return len(posts) > 0 && strings.Contains(current(evs, posts[len(posts)-1]).Body, "Done")
	})
	posts := botPosts(evs, bot, room, root)
	total := len(strings.Join(parts, ""))
	if want := (total + matrix.PartLimit(0) - 1) / matrix.PartLimit(0); len(posts) < want || len(posts) > want+1 {
		t.Fatalf("%d messages for a %d-byte answer, want %d (part limit %d)", len(posts), total, want, matrix.PartLimit(0))
	}
	var all strings.Builder
	for _, p := range posts {
		for _, e := range append(editsOf(evs, p.ID), p) {
			if n := contentSize(e); n > matrix.DefaultMaxEventBytes {
				t.Errorf("event %s is %d bytes of content", e.ID, n)
			}
		}
		all.WriteString(current(evs, p).Body)
	}
	text := all.String()
	last := -1
	for i := range parts {
		at := strings.Index(text, fmt.Sprintf("Paragraph %02d:", i))
		if at <= last {
			t.Fatalf("paragraph %d missing or out of order", i)
		}
		last = at
	}
}

// TestStepsAndPlanInTheAnswer: the agent's tool calls show as list items
// where they ran between its paragraphs, its plan as an ordered list whose
// marks follow the agent's updates; both stay in the final message, in the
// HTML and in the plain body.
func TestStepsAndPlanInTheAnswer(t *testing.T) {
	w, alice, _, room := started(t, "sqlite", false)
	bot := w.botUser.ID
	plan := func(st ...agent.PlanStatus) agent.Event {
		p := &agent.Plan{}
		for i, s := range st {
			p.Items = append(p.Items, agent.PlanItem{Text: []string{"Look around", "Run the tests", "Report"}[i], Status: s})
		}
		return agent.Event{Type: agent.EventPlanUpdated, Plan: p}
	}
	// The agent goes on once alice saw what it did so far (an edit with
	// html), so every state shows however loaded the machine is.
	var root id.EventID
	shown := func(ctx context.Context, html string) {
		for ctx.Err() == nil {
			for _, e := range alice.snapshot() {
				if c := msgContent(e); c != nil && e.Sender == bot && c.NewContent != nil && strings.Contains(c.NewContent.FormattedBody, html) {
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	w.prov.add(func(ctx context.Context, req agent.RunRequest, emit func(agent.Event)) error {
		ctx, cancel := context.WithTimeout(ctx, waitLong)
		defer cancel()
		step := func(html string, evs ...agent.Event) {
			for _, e := range evs {
				emit(e)
			}
			shown(ctx, html)
		}
		step("<li>⏺ <strong>Look around</strong></li><li>○ Run the tests</li>", plan(agent.PlanInProgress, agent.PlanPending, agent.PlanPending),
			agent.Event{Type: agent.EventAssistantDelta, Text: "I'll look around first."})
		step("<li>⏺ <code>Bash: ls -la</code></li>", agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Summary: "Bash: ls -la"}})
		step("<li>⏺ <strong>Run the tests</strong></li>", agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t1", Name: "Bash", Output: "a.txt\nb.txt"}},
			plan(agent.PlanCompleted, agent.PlanInProgress, agent.PlanPending))
		step("One test fails.", agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: "t2", Name: "Bash", Summary: "Bash: go test ./..."}},
			agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: "t2", Name: "Bash", IsError: true, Output: "FAIL x_test.go:3"}},
			plan(agent.PlanCompleted, agent.PlanCompleted, agent.PlanInProgress),
			agent.Event{Type: agent.EventAssistantDelta, Text: "One test fails."})
		emit(plan(agent.PlanCompleted, agent.PlanCompleted, agent.PlanCompleted))
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	})
	root = alice.say(room, "", w.botUser.Name+": check the tests", bot)
	evs := alice.wait("the final answer", waitLong, func(evs []*event.Event) bool {
		p := postWith(evs, bot, room, root, "look around")
		return p != nil && strings.Contains(current(evs, p).Body, "Done")
	})
	answer := postWith(evs, bot, room, root, "look around")
	final := current(evs, answer)
	for _, want := range []string{
		"<p>I'll look around first.</p>\n<ul><li>✓ <code>Bash: ls -la</code></li><li>✗ <code>Bash: go test ./...</code> — <em>FAIL x_test.go:3</em></li></ul>\n<p>One test fails.</p>",
		"<ol><li>✓ <del>Look around</del></li><li>✓ <del>Run the tests</del></li><li>✓ <del>Report</del></li></ol>",
	} {
		if !strings.Contains(final.FormattedBody, want) {
			t.Errorf("final HTML lacks %q:\n%s", want, final.FormattedBody)
		}
	}
	if !strings.Contains(final.Body, "I'll look around first.\n\n✓ Bash: ls -la\n✗ Bash: go test ./...: FAIL x_test.go:3\n\nOne test fails.") ||
		!strings.Contains(final.Body, "  ✓ Report") {
		t.Errorf("final plain body:\n%s", final.Body)
	}
	// While it ran, edits showed the first step running and the plan's
	// items in progress in turn.
	for _, want := range []string{"<li>⏺ <code>Bash: ls -la</code></li>", "<li>⏺ <strong>Look around</strong></li><li>○ Run the tests</li>",
		"<li>✓ <del>Look around</del></li><li>⏺ <strong>Run the tests</strong></li>"} {
		if !slices.ContainsFunc(editsOf(evs, answer.ID), func(e *event.Event) bool {
			return strings.Contains(msgContent(e).NewContent.FormattedBody, want)
		}) {
			t.Errorf("no edit showed %q", want)
		}
	}
	t.Logf("steps and plan: %d edits of one message, final content %d bytes", len(editsOf(evs, answer.ID)), contentSize(editsOf(evs, answer.ID)[len(editsOf(evs, answer.ID))-1]))
}

// TestParallelAnswersWithinBudget: ten 20 KB answers stream at once in ten
// threads with the production budget (progress edits of a message at least
// 1 s apart, 50 edits a minute in a burst of 5 for the workspace): each is
// one message with its whole text, no message is edited faster than the
// budget, and the workspace's edits stay within the bucket.
func TestParallelAnswersWithinBudget(t *testing.T) {
	w := newWorld(t, "postgres")
	w.budget = &chatops.Budget{}
	w.startBot(false)
	alice, bob := w.human(w.alice, false), w.human(w.bob, false)
	room := w.room(alice, bob, false)
	bot := w.botUser.ID
	const runs = 10
	pieces, whole := twentyKB()
	roots := make([]id.EventID, runs)
	for i := range runs {
		w.prov.add(script{before: pieces, pause: 100 * time.Millisecond}.turn)
		roots[i] = alice.say(room, "", fmt.Sprintf("%s: write 20 KB, number %d", w.botUser.Name, i), bot)
	}
	start := time.Now()
	evs := alice.wait("ten whole answers", 4*waitLong, func(evs []*event.Event) bool {
		for _, root := range roots {
			p := postWith(evs, bot, room, root, "Paragraph 000")
			if p == nil || !strings.Contains(current(evs, p).Body, "Done") {
				return false
			}
		}
		return true
	})
	took := time.Since(start)
	budget := chatops.Budget{}.WithDefaults()
	var all []int64 // every edit's server time
	most := 0
	for _, root := range roots {
		posts := botPosts(evs, bot, room, root)
		if len(posts) != 1 || !strings.Contains(current(evs, posts[0]).Body, whole) {
			t.Fatalf("thread %s: %d messages, whole text %v", root, len(posts), len(posts) == 1 && strings.Contains(current(evs, posts[0]).Body, whole))
		}
		edits := editsOf(evs, posts[0].ID)
		most = max(most, len(edits))
		for i, e := range edits {
			all = append(all, e.Timestamp)
			if i > 0 && i < len(edits)-1 {
				if gap := time.Duration(e.Timestamp-edits[i-1].Timestamp) * time.Millisecond; gap < budget.MinInterval*2/3 {
					t.Errorf("thread %s: edits %d and %d are %s apart, budget %s", root, i-1, i, gap, budget.MinInterval)
				}
			}
		}
	}
	// The workspace's bucket: in any window, at most the burst plus the rate
	// (and a little for the server's clock against the bot's).
	slices.Sort(all)
	for i := range all {
		for j := i; j < len(all); j++ {
			window := time.Duration(all[j]-all[i]) * time.Millisecond
			allowed := float64(budget.Update.Burst) + budget.Update.PerMinute*(window+500*time.Millisecond).Minutes() + 1
			if float64(j-i+1) > allowed {
				t.Fatalf("%d edits in %s, the budget allows %.1f", j-i+1, window, allowed)
			}
		}
	}
	t.Logf("%d parallel 20 KB answers: %d edits in all (at most %d for one answer), %d posts, done in %s, %d rate-limited answers from the homeserver",
		runs, len(all), most, runs, took.Round(100*time.Millisecond), w.bot.RateLimited())
}
