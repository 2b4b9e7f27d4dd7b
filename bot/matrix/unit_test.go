package matrix

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops"
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
		Status: "fake · (default) · 3s", Body: "Doing **it**", Steps: []string{"✓ Bash: ls"}, Footer: "Done in 3s",
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
	for _, w := range []string{"<em>fake · (default) · 3s</em>", "<strong>it</strong>", "<code>✓ Bash: ls</code>", "<em>Done in 3s</em>"} {
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

func TestFit(t *testing.T) {
	small := content(chatops.View{Body: "short"}, nil)
	if fit(small, maxContentBytes) || small.FormattedBody == "" {
		t.Fatal("a short message was changed")
	}
	for _, body := range []string{strings.Repeat("é\"<", 30000), strings.Repeat("word ", 20000)} {
		c := content(chatops.View{Body: body}, nil)
		if !fit(c, maxEncryptedContentBytes) {
			t.Fatal("a long message was not cut")
		}
		b, _ := json.Marshal(c)
		if len(b) > maxEncryptedContentBytes {
			t.Errorf("content is %d bytes, limit %d", len(b), maxEncryptedContentBytes)
		}
		if !utf8.ValidString(c.Body) || !strings.HasSuffix(c.Body, "too long for one Matrix event)") || c.FormattedBody != "" {
			t.Errorf("cut body ends %q", c.Body[max(len(c.Body)-80, 0):])
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
		if a, ok := parseReply(approval, text); !ok || a.button.ID != want {
			t.Errorf("parseReply(approval, %q) = %+v %v, want %s", text, a, ok, want)
		}
	}
	if _, ok := parseReply(approval, "what does it do?"); ok {
		t.Error("a question to the agent was taken as an answer")
	}
	opt := func(i int, a string) chatops.Button {
		r := base
		r.Decision, r.QuestionID, r.Answer = agent.DecisionAnswer, "color", a
		return chatops.Button{ID: chatops.ButtonOptionPrefix + itoa(i), Value: ref(r)}
	}
	question := &card{buttons: []chatops.Button{opt(0, "red"), opt(1, "green"),
		{ID: chatops.ButtonAnswer, Value: ref(base)}, {ID: chatops.ButtonDecline, Value: ref(base)}}}
	if a, ok := parseReply(question, "2"); !ok || a.button.ID != chatops.ButtonOptionPrefix+"1" {
		t.Errorf("option 2 → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "decline"); !ok || a.button.ID != chatops.ButtonDecline {
		t.Errorf("decline → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "Teal, please"); !ok || a.text != "Teal, please" || a.qid != "color" {
		t.Errorf("free text → %+v %v", a, ok)
	}
	if a, ok := parseReply(question, "7"); !ok || a.text != "7" {
		t.Errorf("a number out of range is free text: %+v %v", a, ok)
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
