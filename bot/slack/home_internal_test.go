package slack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/chatops"
)

// TestRunEnd: a home tab line says how the thread's latest run ended, as
// the footer of its answer begins.
func TestRunEnd(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, c := range []struct {
		status string
		d      time.Duration
		want   string
	}{
		{"completed", 12 * time.Second, "Done in 12s"},
		{"interrupted", 3*time.Minute + 5*time.Second, "Stopped after 3m05s"},
		{"failed", 2*time.Hour + 7*time.Minute, "Failed after 2h07m"},
		{"running", 0, ""},
		{"weird", time.Second, ""},
	} {
		h := chatops.HomeThread{Status: c.status, Started: at}
		if c.status != "running" {
			h.Ended = at.Add(c.d)
		}
		if got := runEnd(h); got != c.want {
			t.Errorf("runEnd(%s, %v) = %q, want %q", c.status, c.d, got, c.want)
		}
	}
	if got := runEnd(chatops.HomeThread{Status: "completed"}); got != "Done" {
		t.Errorf("without times: %q", got)
	}
}

// TestHomeBehind: a publish is put off while the store still shows as
// running a run whose thread already showed its end, and not for a run that
// started after that end, nor for one still running.
func TestHomeBehind(t *testing.T) {
	p := chatops.Place{Platform: Platform, Workspace: "T1", Channel: "C1", Thread: "1.1"}
	h := newHome(nil, nil, nil, true, nil, t.Context())
	ended := time.Now()
	h.runs[p] = seenRun{running: false, at: ended}
	run := func(started time.Time) []chatops.HomeThread {
		return []chatops.HomeThread{{Place: p, Status: "running", Started: started}}
	}
	if !h.behind(run(ended.Add(-time.Second))) {
		t.Error("a run whose end was shown, still running in the store, is not behind")
	}
	if h.behind(run(ended.Add(time.Second))) {
		t.Error("a run started after the shown end is behind")
	}
	if h.behind([]chatops.HomeThread{{Place: p, Status: "completed", Started: ended.Add(-time.Second), Ended: ended}}) {
		t.Error("a finished run is behind")
	}
	h.runs[p] = seenRun{running: true, at: ended}
	if h.behind(run(ended.Add(-time.Second))) {
		t.Error("a run shown running is behind")
	}
}

// labelDesk is a homeDesk whose Scrub keeps the text as it is.
type labelDesk struct{}

func (labelDesk) HomeThreads(context.Context, chatops.User, string, int) ([]chatops.HomeThread, error) {
	return nil, nil
}
func (labelDesk) HomeViewers(context.Context, chatops.Place, int) ([]chatops.User, error) {
	return nil, nil
}
func (labelDesk) Scrub(s string) string { return s }

// TestHomeTitleCannotEndItsLink: a chat title (from a person or an agent)
// that holds > and < cannot close its link and add one of its own to the
// Home tab, also with slack.allow_mentions, nor turn its first > into a
// quote mark.
func TestHomeTitleCannotEndItsLink(t *testing.T) {
	for _, mentions := range []bool{false, true} {
		allowMentions.Store(mentions)
		h := &home{desk: labelDesk{}, url: "https://example.slack.com/"}
		v := h.view([]chatops.HomeThread{{
			Place:  chatops.Place{Platform: "slack", Workspace: "T1", Channel: "C1", Thread: "1.2"},
			Title:  "> x> <https://evil.example|Re-authenticate",
			Status: "completed",
		}})
		var text string
		for _, b := range v.Blocks.BlockSet {
			if sb, ok := b.(*slack.SectionBlock); ok && sb.Text != nil {
				text += sb.Text.Text
			}
		}
		if strings.Contains(text, "<https://evil") || strings.Count(text, "<") != 1 || strings.Count(text, ">") != 1 {
			t.Errorf("allow_mentions=%v: the title got out of its link: %q", mentions, text)
		}
		if !strings.Contains(text, "&gt; x&gt; &lt;https://evil.example|Re-authenticate>") {
			t.Errorf("allow_mentions=%v: the label is not the escaped title: %q", mentions, text)
		}
	}
	allowMentions.Store(false)
}
