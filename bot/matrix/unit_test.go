package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/render"
)

func TestRenderMarkdown(t *testing.T) {
	for in, want := range map[string][]string{
		"**bold** and `code`":             {"<strong>bold</strong>", "<code>code</code>"},
		"```go\nfmt.Println(1)\n```":      {"<pre><code class=\"language-go\">fmt.Println(1)\n</code></pre>"},
		"| a | b |\n|---|---|\n| 1 | 2 |": {"<table>", "<td>1</td>"},
		"line one\nline two":              {"line one<br>"},
		"~~gone~~ https://example.org":    {"<del>gone</del>", `<a href="https://example.org">`},
	} {
		got := renderMarkdown(in)
		for _, w := range want {
			if !strings.Contains(got, w) {
				t.Errorf("renderMarkdown(%q) = %q, want %q in it", in, got, w)
			}
		}
	}
	// The agent's text never injects HTML.
	got := renderMarkdown("hi <script>alert(1)</script> <img src=x onerror=y>")
	if strings.Contains(got, "<script") || strings.Contains(got, "<img") {
		t.Errorf("raw HTML passed through: %q", got)
	}
}

func TestContent(t *testing.T) {
	ref := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}.Encode()
	v := chatops.View{
		Status: "fake · (default) · 3s", Body: "Doing **it**", Footer: "Done in 3s",
		Tasks: []render.Step{{ID: "1", Title: "Bash: ls", Status: render.StatusDone, At: len("Doing **it**")}},
		Buttons: []chatops.Button{{ID: chatops.ButtonApprove, Value: ref}, {ID: chatops.ButtonApproveSession, Value: ref},
			{ID: chatops.ButtonDecline, Value: ref}, {ID: chatops.ButtonCancel, Value: ref}},
	}
	c := content(v, nil)
	if c.MsgType != event.MsgNotice || c.Format != event.FormatHTML {
		t.Fatalf("content %+v", c)
	}
	for _, w := range []string{"fake · (default) · 3s", "Doing **it**", "✓ Bash: ls", "Done in 3s", KeyApprove + " approve", "reply in this thread"} {
		if !strings.Contains(c.Body, w) {
			t.Errorf("plain body lacks %q: %q", w, c.Body)
		}
	}
	for _, w := range []string{"<em>fake · (default) · 3s</em>", "<strong>it</strong>", "<li>✓ <code>Bash: ls</code></li>", "<em>Done in 3s</em>"} {
		if !strings.Contains(c.FormattedBody, w) {
			t.Errorf("HTML body lacks %q: %q", w, c.FormattedBody)
		}
	}
	if got := cardKeys(v); strings.Join(got, " ") != strings.Join([]string{KeyApprove, KeyApproveSession, KeyDecline, KeyStop}, " ") {
		t.Errorf("cardKeys = %v", got)
	}
	if !isCard(v) || hasStop(v) {
		t.Error("an approval card is a card without Stop")
	}
	run := chatops.View{Body: "…", Buttons: []chatops.Button{{ID: chatops.ButtonStop, Value: ref}}}
	if isCard(run) || !hasStop(run) || cardKeys(run) != nil {
		t.Error("a running answer is not a card")
	}
	// Status and escape: HTML in plain fields is escaped.
	if c := content(chatops.View{Status: "<b>x</b>"}, nil); strings.Contains(c.FormattedBody, "<b>") {
		t.Errorf("status not escaped: %q", c.FormattedBody)
	}
}

// TestFitWire: a message is sent whole when it fits, without its HTML when
// only the plain text fits, cut (valid UTF-8, saying so) when even that is
// too long; in every case its wire size is within the limit, in plain and
// encrypted rooms, for new messages and edits.
func TestFitWire(t *testing.T) {
	small := outgoing{v: chatops.View{Body: "short"}, thread: "$root"}
	w, shrunk, err := fitWire(small, DefaultMaxEventBytes, false)
	if err != nil || shrunk != shrunkNone || w.(*event.MessageEventContent).FormattedBody == "" {
		t.Fatalf("a short message was changed: %v %q", err, shrunk)
	}
	// 20 KB of prose: one whole event, HTML kept, in a plain room.
	prose := strings.Repeat("A paragraph of an answer, with a **bold** word, a `code` span and a [link](https://example.org), "+
		"then plain words that go on for a while as prose does.\n\n- a list item\n- another one\n\n", 130)[:20000]
	for _, o := range []outgoing{{v: chatops.View{Body: prose, Status: "fake · 3s"}, thread: "$root"}, {v: chatops.View{Body: prose}, edit: "$orig"}} {
		w, shrunk, err := fitWire(o, DefaultMaxEventBytes, false)
		if err != nil || shrunk != shrunkNone {
			t.Fatalf("20 KB of prose: %v %q", err, shrunk)
		}
		if n := wireSize(w, false); n > DefaultMaxEventBytes {
			t.Errorf("20 KB of prose is %d bytes on the wire", n)
		}
	}
	ref := chatops.Ref{ChatID: "c", RunID: "r"}.Encode()
	for _, tc := range []struct {
		body      string
		limit     int
		encrypted bool
		want      string
	}{
		{strings.Repeat("<a>&", 8000), DefaultMaxEventBytes, false, shrunkHTML}, // HTML 4x the text
		{strings.Repeat("Dense **bold** and `code` on every line.\n", 500)[:20000], DefaultMaxEventBytes, false, shrunkHTML},
		{prose, DefaultMaxEventBytes, true, shrunkHTML},
		{strings.Repeat("é\"<", 30000), DefaultMaxEventBytes, false, shrunkCut},
		{strings.Repeat("word ", 20000), MinEventBytes, true, shrunkCut},
		{strings.Repeat("\x01", 30000), MaxEventBytesLimit, false, shrunkCut}, // \u0001: six bytes each
	} {
		for _, o := range []outgoing{
			{v: chatops.View{Body: tc.body}, thread: "$root"},
			{v: chatops.View{Body: tc.body, Buttons: []chatops.Button{{ID: chatops.ButtonStop, Value: ref}}}, edit: "$orig"},
		} {
			w, shrunk, err := fitWire(o, tc.limit, tc.encrypted)
			if err != nil || shrunk != tc.want {
				t.Fatalf("%d bytes, limit %d, encrypted %v: shrunk %q (%v), want %q", len(tc.body), tc.limit, tc.encrypted, shrunk, err, tc.want)
			}
			if n := wireSize(w, tc.encrypted); n > tc.limit {
				t.Errorf("%d bytes, limit %d, encrypted %v: %d on the wire", len(tc.body), tc.limit, tc.encrypted, n)
			}
			raw, _ := json.Marshal(w)
			var m struct {
				Body       string `json:"body"`
				Formatted  string `json:"formatted_body"`
				NewContent *struct {
					Body      string `json:"body"`
					Formatted string `json:"formatted_body"`
				} `json:"m.new_content"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			body, formatted := m.Body, m.Formatted
			if m.NewContent != nil {
				body, formatted = m.NewContent.Body, m.NewContent.Formatted
			}
			if formatted != "" || !utf8.ValidString(body) {
				t.Errorf("shrunk message keeps HTML %d bytes or is not UTF-8", len(formatted))
			}
			if tc.want == shrunkCut && !strings.Contains(body, "too long for one Matrix event)") {
				t.Errorf("cut body does not say so: %q", body[max(len(body)-80, 0):])
			}
			if tc.want == shrunkHTML && !strings.HasPrefix(body, tc.body) {
				t.Error("the plain body lost text")
			}
		}
	}
}

// TestPartLimit: the default takes a 20 KB answer in one message; the
// limit follows max_event_bytes.
func TestPartLimit(t *testing.T) {
	if got := PartLimit(0); got < 20480 || got != PartLimit(DefaultMaxEventBytes) {
		t.Errorf("PartLimit(0) = %d, want >= 20480", got)
	}
	if a, b := PartLimit(MinEventBytes), PartLimit(MaxEventBytesLimit); a >= b || b*2 > MaxEventBytesLimit {
		t.Errorf("PartLimit %d..%d", a, b)
	}
	for _, n := range []int{MinEventBytes - 1, MaxEventBytesLimit + 1, -5} {
		if _, err := New(Config{Homeserver: "http://x", UserID: "@b:x", Password: "p", MaxEventBytes: n}, &recordingDesk{}, noAccounts{}, nil, nil); !errors.Is(err, ErrConfig) {
			t.Errorf("MaxEventBytes %d: %v, want ErrConfig", n, err)
		}
	}
}

func TestReactionButton(t *testing.T) {
	for key, want := range map[string]string{
		"✅": chatops.ButtonApprove, "🔁": chatops.ButtonApproveSession,
		"❌": chatops.ButtonDecline, "⏹": chatops.ButtonStop, "⏹️": chatops.ButtonStop,
		"1️⃣": chatops.ButtonOptionPrefix + "0", "3️⃣": chatops.ButtonOptionPrefix + "2",
	} {
		if got, ok := reactionButton(key); !ok || got != want {
			t.Errorf("reactionButton(%q) = %q %v, want %q", key, got, ok, want)
		}
	}
	if _, ok := reactionButton("🎉"); ok {
		t.Error("🎉 pressed a button")
	}
}

func TestParseReply(t *testing.T) {
	ref := func(r chatops.Ref) string { return r.Encode() }
	base := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}
	approval := &card{buttons: []chatops.Button{
		{ID: chatops.ButtonApprove, Value: ref(base)}, {ID: chatops.ButtonApproveSession, Value: ref(base)},
		{ID: chatops.ButtonDecline, Value: ref(base)}, {ID: chatops.ButtonCancel, Value: ref(base)},
	}}
	for text, want := range map[string]string{
		"approve": chatops.ButtonApprove, "Approve!": chatops.ButtonApprove, "approve for session": chatops.ButtonApproveSession,
		"  DENY ": chatops.ButtonDecline, "no": chatops.ButtonDecline, "stop": chatops.ButtonCancel,
	} {
		if a, ok := parseReply(approval, text, nil); !ok || a.button.ID != want {
			t.Errorf("parseReply(approval, %q) = %+v %v, want %s", text, a, ok, want)
		}
	}
	if _, ok := parseReply(approval, "what does it do?", nil); ok {
		t.Error("a question to the agent was taken as an answer")
	}
	opt := func(i int, a string) chatops.Button {
		r := base
		r.Decision, r.QuestionID, r.Answer = agent.DecisionAnswer, "color", a
		return chatops.Button{ID: chatops.ButtonOptionPrefix + itoa(i), Label: a, Value: ref(r)}
	}
	question := &card{buttons: []chatops.Button{opt(0, "red"), opt(1, "green"),
		{ID: chatops.ButtonAnswer, Value: ref(base)}, {ID: chatops.ButtonDecline, Value: ref(base)}}}
	if a, ok := parseReply(question, "2", nil); !ok || a.button.ID != chatops.ButtonOptionPrefix+"1" {
		t.Errorf("option 2 → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "decline", nil); !ok || a.button.ID != chatops.ButtonDecline {
		t.Errorf("decline → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "Teal, please", nil); !ok || a.text != "Teal, please" || a.qid != "color" {
		t.Errorf("free text → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "7", nil); !ok || a.text != "7" {
		t.Errorf("a number out of range is free text: %+v %v", a, ok)
	}
	// Without an Answer button the question takes only its options: other
	// text is no answer (and says how many options there are).
	closed := &card{buttons: []chatops.Button{opt(0, "red"), opt(1, "green"), {ID: chatops.ButtonDecline, Value: ref(base)}}}
	if a, ok := parseReply(closed, "1", nil); !ok || a.button.ID != chatops.ButtonOptionPrefix+"0" {
		t.Errorf("option 1 of a closed question → %+v %v", a, ok)
	}
	if a, ok := parseReply(closed, "Teal, please", nil); !ok || a.text != "" || !slices.Equal(a.only, []string{"red", "green"}) {
		t.Errorf("free text to a closed question → %+v %v", a, ok)
	}
	// With an Answer button but a question that allows no other answer
	// (onlyOptions gave its options): the same, naming the question's options.
	only := []string{"red", "green", "a long blue"}
	if a, ok := parseReply(question, "Teal, please", only); !ok || a.text != "" || !slices.Equal(a.only, only) {
		t.Errorf("free text to a question without AllowOther → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "2", only); !ok || a.button.ID != chatops.ButtonOptionPrefix+"1" {
		t.Errorf("option 2 of a question without AllowOther → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "skip", only); !ok || a.button.ID != chatops.ButtonDecline {
		t.Errorf("skip of a question without AllowOther → %+v %v", a, ok)
	}
	if got, want := onlyOptionsNotice(only), "(1. red · 2. green · 3. a long blue)"; !strings.Contains(got, want) {
		t.Errorf("notice %q does not name the options %q", got, want)
	}
	for _, c := range []struct {
		v    chatops.View
		only bool
		want string
	}{
		{chatops.View{Buttons: question.buttons}, false, "with your own answer (free text is accepted)."},
		{chatops.View{Buttons: question.buttons}, true, "with an option's number."},
		{chatops.View{Buttons: closed.buttons}, false, "with an option's number."},
		{chatops.View{Buttons: []chatops.Button{{ID: chatops.ButtonAnswer, Value: ref(base)}}}, false, "with your answer."},
	} {
		if h := hint(c.v, c.only); !strings.HasSuffix(h, c.want) {
			t.Errorf("hint(only options %v) %q, want it to end %q", c.only, h, c.want)
		}
	}
}

// questionsDesk is a recordingDesk that knows the pending questions.
type questionsDesk struct {
	recordingDesk
	qs  map[agent.InteractionID][]agent.Question
	err error
}

func (d *questionsDesk) Questions(_ context.Context, ref chatops.Ref) ([]agent.Question, error) {
	if d.err != nil {
		return nil, d.err
	}
	qs, ok := d.qs[ref.InteractionID]
	if !ok {
		return nil, chatops.ErrNoInteraction
	}
	return qs, nil
}

// TestOnlyOptions: whether a question card takes free text is read from the
// pending question itself (AllowOther), not from its Answer button, which
// render gives every question.
func TestOnlyOptions(t *testing.T) {
	ref := func(id agent.InteractionID, qid, a string) string {
		r := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: id, Decision: agent.DecisionAnswer, QuestionID: qid, Answer: a}
		return r.Encode()
	}
	card := func(id agent.InteractionID) []chatops.Button {
		return []chatops.Button{{ID: chatops.ButtonOptionPrefix + "0", Label: "red", Value: ref(id, "color", "red")},
			{ID: chatops.ButtonOptionPrefix + "1", Label: "green", Value: ref(id, "color", "green")},
			{ID: chatops.ButtonAnswer, Value: ref(id, "color", "")}, {ID: chatops.ButtonDecline, Value: ref(id, "", "")}}
	}
	colors := []string{"red", "green"}
	desk := &questionsDesk{qs: map[agent.InteractionID][]agent.Question{
		"closed": {{ID: "color", Text: "Which color?", Options: colors}},
		"open":   {{ID: "color", Text: "Which color?", Options: colors, AllowOther: true}},
		"two":    {{ID: "a", Options: colors}, {ID: "b", Options: colors}},
	}}
	b := &Bot{desk: desk}
	for _, c := range []struct {
		name    string
		buttons []chatops.Button
		want    []string
	}{
		{"closed", card("closed"), colors},
		{"allow other", card("open"), nil},
		{"two questions", card("two"), nil},
		{"not pending", card("gone"), nil},
		{"no answer button", card("x")[:2], colors},
		{"no options", card("closed")[2:], nil},
		{"no card", []chatops.Button{{ID: chatops.ButtonStop, Value: ref("closed", "", "")}}, nil},
	} {
		if got := b.onlyOptions(t.Context(), c.buttons); !slices.Equal(got, c.want) {
			t.Errorf("%s: onlyOptions = %q, want %q", c.name, got, c.want)
		}
	}
	// A desk that cannot tell the questions: free text goes to the desk.
	if got := (&Bot{desk: &recordingDesk{}}).onlyOptions(t.Context(), card("closed")); got != nil {
		t.Errorf("without Questions: %q", got)
	}
	desk.err = errors.New("boom")
	if got := b.onlyOptions(t.Context(), card("closed")); got != nil {
		t.Errorf("a failing Questions: %q", got)
	}
}

func TestAddressed(t *testing.T) {
	b := &Bot{me: "@threadline:example.org", displayName: "Threadline"}
	for body, want := range map[string]struct {
		ok   bool
		text string
	}{
		"Threadline: fix the build":            {true, "fix the build"},
		"threadline, status":                   {true, "status"},
		"@threadline:example.org hi":           {true, "hi"},
		"!threadline stop":                     {true, "stop"},
		"!THREADLINE":                          {true, ""},
		"please ask Threadline about it":       {true, "please ask Threadline about it"},
		"threadlines are nice":                 {false, "threadlines are nice"},
		"!threadlinex foo":                     {false, "!threadlinex foo"},
		"nothing for the bot":                  {false, "nothing for the bot"},
		"ping @threadline:example.org, please": {true, "ping @threadline:example.org, please"},
	} {
		ok, text := b.addressed(&event.MessageEventContent{Body: body})
		if ok != want.ok || text != want.text {
			t.Errorf("addressed(%q) = %v %q, want %v %q", body, ok, text, want.ok, want.text)
		}
	}
	ok, _ := b.addressed(&event.MessageEventContent{Body: "hello", Mentions: &event.Mentions{UserIDs: []id.UserID{b.me}}})
	if !ok {
		t.Error("m.mentions ignored")
	}
}

func TestRetryAfter(t *testing.T) {
	h := http.Header{}
	if got := retryAfter(h, []byte(`{"errcode":"M_LIMIT_EXCEEDED","retry_after_ms":1500}`), time.Second); got != 1500*time.Millisecond {
		t.Errorf("body: %s", got)
	}
	h.Set("Retry-After", "3")
	if got := retryAfter(h, []byte(`{"errcode":"M_LIMIT_EXCEEDED"}`), time.Second); got != 3*time.Second {
		t.Errorf("header: %s", got)
	}
	if got := retryAfter(http.Header{}, []byte(`not json`), 2*time.Second); got != 2*time.Second {
		t.Errorf("fallback: %s", got)
	}
	err := asRateLimit(mautrix.HTTPError{Response: &http.Response{StatusCode: 429, Header: http.Header{}},
		RespError: &mautrix.RespError{ErrCode: "M_LIMIT_EXCEEDED", StatusCode: 429, ExtraData: map[string]any{"retry_after_ms": 2500.0}}}, "edit")
	var rle *chatops.RateLimitError
	if !errors.As(err, &rle) || rle.RetryAfter != 2500*time.Millisecond || rle.Method != "edit" || !errors.Is(err, mautrix.MLimitExceeded) {
		t.Errorf("asRateLimit = %v", err)
	}
	other := errors.New("boom")
	if asRateLimit(other, "edit") != other {
		t.Error("a plain error was changed")
	}
}

// TestPollVote: both response forms are read; anything else is no vote.
func TestPollVote(t *testing.T) {
	ref := map[string]any{"rel_type": "m.reference", "event_id": "$poll"}
	for _, tc := range []struct {
		raw  map[string]any
		poll id.EventID
		want string
	}{
		{map[string]any{"m.relates_to": ref, "org.matrix.msc3381.poll.response": map[string]any{"answers": []any{"tl_option_1"}}}, "$poll", "tl_option_1"},
		{map[string]any{"m.relates_to": ref, "m.selections": []any{"tl_option_2", 7}}, "$poll", "tl_option_2"},
		{map[string]any{"m.relates_to": ref, "m.selections": []any{}}, "$poll", ""},
		{map[string]any{"m.relates_to": map[string]any{"rel_type": "m.thread", "event_id": "$x"}, "m.selections": []any{"a"}}, "", ""},
		{map[string]any{"org.matrix.msc3381.poll.response": "junk"}, "", ""},
	} {
		poll, answers := pollVote(tc.raw)
		if poll != tc.poll || strings.Join(answers, ",") != tc.want {
			t.Errorf("pollVote(%v) = %q %v, want %q %q", tc.raw, poll, answers, tc.poll, tc.want)
		}
	}
}

// TestPollContent: the poll asks the card's question with its option
// buttons as answers, in the thread, naming the card.
func TestPollContent(t *testing.T) {
	ref := chatops.Ref{ChatID: "c", RunID: "r", InteractionID: "i"}.Encode()
	v := chatops.View{Body: "**Colors**\n**Pick** Which color?\n1. red\n2. green", Fallback: "Colors",
		Buttons: []chatops.Button{{ID: "tl_option_0", Label: "red", Value: ref}, {ID: "tl_option_1", Label: "green", Value: ref},
			{ID: chatops.ButtonAnswer, Value: ref}, {ID: chatops.ButtonDecline, Value: ref}}}
	raw, _ := json.Marshal(pollContent(v, "$root", event.RelThread, "$card"))
	want := `{"m.relates_to":{"rel_type":"m.thread","event_id":"$root","m.in_reply_to":{"event_id":"$root"},"is_falling_back":true},` +
		`"org.matrix.msc1767.text":"Pick Which color?\n1. red\n2. green",` +
		`"org.matrix.msc3381.poll.start":{"answers":[{"id":"tl_option_0","org.matrix.msc1767.text":"red"},{"id":"tl_option_1","org.matrix.msc1767.text":"green"}],` +
		`"kind":"org.matrix.msc3381.poll.disclosed","max_selections":1,"question":{"org.matrix.msc1767.text":"Pick Which color?"}},"org.threadline.card":"$card"}`
	if string(raw) != want {
		t.Errorf("poll content\n%s\nwant\n%s", raw, want)
	}
	if pollOptions(chatops.View{Buttons: []chatops.Button{{ID: chatops.ButtonApprove}}}) != nil {
		t.Error("an approval has no poll")
	}
	if q := pollQuestion(chatops.View{Body: "no options", Fallback: "The agent has a question"}); q != "The agent has a question" {
		t.Errorf("pollQuestion = %q", q)
	}
}

// TestStepsAndPlan: tool steps show where they ran in the text, as compact
// list items (a failed one with its output's first line); the plan is an
// ordered list with marks; the step lines that repeat them are not shown
// again, notes are; the plain body says the same.
func TestStepsAndPlan(t *testing.T) {
	body := "I'll create the file now.\n\nTool finished.\n\n```go\nx := 1\n```\nDone."
	v := chatops.View{
		Status: "claude · opus",
		Body:   body,
		Tasks: []render.Step{
			{ID: "1", Tool: "Bash", Title: "Bash: touch a.txt", Status: render.StatusDone, Output: "ok", At: len("I'll create the file now.")},
			{ID: "2", Tool: "Read", Title: "Read: <a.txt>", Status: render.StatusFailed, Output: "no such file\nmore", At: len("I'll create the file now.")},
			{ID: "3", Tool: "Edit", Title: "Edit: x.go", Status: render.StatusRunning, At: strings.Index(body, "x := 1")}, // inside the code block
		},
		Plan: &render.Plan{Title: "Plan", Items: []render.PlanItem{{Text: "Write", Status: render.StatusDone}, {Text: "Test", Status: render.StatusRunning}, {Text: "Ship", Status: render.StatusPending}}},
		Steps: []string{"… the answer is longer than 8 messages: the whole answer is attached when the run ends", "⚠ session recovered",
			"📋 Plan", "  ✓ Write", "  ⏺ Test", "  ○ Ship", "… 3 earlier steps", "✓ Bash: earlier part", "✓ Bash: touch a.txt"},
	}
	c := content(v, nil)
	wantPlain := "claude · opus\n\nI'll create the file now.\n\n✓ Bash: touch a.txt\n✗ Read: <a.txt>: no such file\n\nTool finished.\n\n```go\nx := 1\n```\n\n⏺ Edit: x.go\n\nDone.\n\n" +
		"📋 Plan\n  ✓ Write\n  ⏺ Test\n  ○ Ship\n\n… the answer is longer than 8 messages: the whole answer is attached when the run ends\n⚠ session recovered"
	if c.Body != wantPlain {
		t.Errorf("plain body\n%s\nwant\n%s", c.Body, wantPlain)
	}
	for _, w := range []string{
		"<p>I'll create the file now.</p>\n<ul><li>✓ <code>Bash: touch a.txt</code></li><li>✗ <code>Read: &lt;a.txt&gt;</code> — <em>no such file</em></li></ul>\n<p>Tool finished.</p>",
		"</code></pre>\n<ul><li>⏺ <code>Edit: x.go</code></li></ul>\n<p>Done.</p>",
		"<p><strong>📋 Plan</strong></p><ol><li>✓ <del>Write</del></li><li>⏺ <strong>Test</strong></li><li>○ Ship</li></ol>",
		"<ul><li>… the answer is longer than 8 messages: the whole answer is attached when the run ends</li><li>⚠ session recovered</li></ul>",
	} {
		if !strings.Contains(c.FormattedBody, w) {
			t.Errorf("HTML lacks %q:\n%s", w, c.FormattedBody)
		}
	}
	if strings.Count(c.Body, "Bash: touch a.txt") != 1 || strings.Contains(c.Body, "  ✓ Write\n  ✓ Write") {
		t.Errorf("steps or plan shown twice:\n%s", c.Body)
	}

	// A busy message lists its latest steps and sums up the older ones.
	var many []render.Step
	for i := range 20 {
		many = append(many, render.Step{ID: itoa(i), Tool: []string{"Read", "Bash"}[i%2], Title: "step " + itoa(i), Status: render.StatusDone})
	}
	c = content(chatops.View{Body: "Working through it.", Tasks: many}, nil)
	if !strings.Contains(c.Body, "✓ 8 steps: Read, Bash\n✓ step 8\n") || strings.Contains(c.Body, "step 7") || strings.Count(c.FormattedBody, "<li>") != 13 {
		t.Errorf("busy message:\n%s\n%s", c.Body, c.FormattedBody)
	}
	if a, b := content(v, nil), content(v, nil); a.Body != b.Body || a.FormattedBody != b.FormattedBody {
		t.Error("the same view renders differently")
	}
}

// TestVoteInAnotherPoll: votes in a poll that is not the bot's press
// nothing, and that poll is fetched once, not for every vote.
func TestVoteInAnotherPoll(t *testing.T) {
	var fetches atomic.Int32
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/event/") {
			fetches.Add(1)
			_, _ = w.Write([]byte(`{"type":"org.matrix.msc3381.poll.start","sender":"@bob:fuzz.test","event_id":"$bobs","room_id":"!room:fuzz.test",` +
				`"content":{"org.matrix.msc3381.poll.start":{"kind":"org.matrix.msc3381.poll.disclosed","max_selections":1,"question":{"org.matrix.msc1767.text":"Lunch?"},"answers":[{"id":"tl_option_0","org.matrix.msc1767.text":"yes"}]},"org.threadline.card":"$card"}}`))
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"errcode":"M_NOT_FOUND","error":"no"}`))
	}))
	defer hs.Close()
	b, desk := offlineBot(t)
	cli, err := mautrix.NewClient(hs.URL, b.me, "t")
	if err != nil {
		t.Fatal(err)
	}
	cli.StateStore = mautrix.NewMemoryStateStore()
	b.cli = cli
	for i := range 3 {
		evt := &event.Event{Type: event.EventUnstablePollResponse, Sender: "@alice:fuzz.test", RoomID: "!room:fuzz.test", ID: id.EventID("$vote" + itoa(i))}
		evt.Content.Raw = map[string]any{"m.relates_to": map[string]any{"rel_type": "m.reference", "event_id": "$bobs"},
			"org.matrix.msc3381.poll.response": map[string]any{"answers": []any{"tl_option_0"}}}
		b.onPollResponse(t.Context(), evt)
	}
	if n := fetches.Load(); n != 1 {
		t.Errorf("bob's poll fetched %d times, want 1", n)
	}
	if len(desk.clicks) != 0 {
		t.Errorf("a vote in bob's poll (naming the bot's card) pressed %+v", desk.clicks)
	}
}
