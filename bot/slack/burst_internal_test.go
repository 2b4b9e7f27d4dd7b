package slack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// TestBurstOf500sMidStream (issue 30): Slack answers 9 consecutive calls
// with HTTP 500 in the middle of a natively streamed answer of 40 words;
// the outbox retries them with backoff (short here) and the answer still
// ends whole: every word once, in order, the footer, and the stream
// stopped.
func TestBurstOf500sMidStream(t *testing.T) {
	t.Run("mid-stream", func(t *testing.T) { burstOf500s(t, 21) })
	t.Run("at the stop", func(t *testing.T) { burstOf500s(t, 40) })
}

// burstOf500s streams 40 words; from word burstAt on, Slack answers the
// next 9 calls with 500.
func burstOf500s(t *testing.T, burstAt int) {
	fake := slacktest.New(t)
	s := &surface{api: slack.New(slacktest.BotToken, slack.OptionAPIURL(fake.APIURL())), stream: true, requester: map[chatops.Place]string{}}
	budget := outbox.Budget{MinInterval: time.Millisecond, RetryMin: 5 * time.Millisecond, RetryMax: 20 * time.Millisecond,
		Post: outbox.Rate{PerMinute: 60000, Burst: 100}, Append: outbox.Rate{PerMinute: 60000, Burst: 100},
		Update: outbox.Rate{PerMinute: 60000, Burst: 100}, Stop: outbox.Rate{PerMinute: 60000, Burst: 100}}
	o := outbox.New(s, nil, budget, true, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); o.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	p := chatops.Place{Platform: Platform, Workspace: slacktest.TeamID, Channel: "D1", Thread: fake.PostUserMessage("D1", "", "hi")}
	const runID = "r1"
	flush := func() {
		t.Helper()
		fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
		defer fcancel()
		if err := o.Flush(fctx, runID); err != nil {
			t.Fatalf("flush: %v", err)
		}
	}
	words := make([]string, 40)
	for i := range words {
		words[i] = fmt.Sprintf("w%02d", i+1)
	}
	put := func(seq int, n int, final bool) {
		v := render.View{Body: strings.Join(words[:n], " ")}
		prio := render.PriorityProgress
		if final {
			v.Footer, prio = "Done in 4s", render.PriorityFinal
		}
		o.Put("c1", runID, p, 1, int64(seq), render.SlotView{Slot: "answer/0", View: v, Priority: prio, Final: final})
	}
	calls := fake.Listen()
	for n := 1; n <= 40; n++ {
		if n == burstAt {
			// Slack fails: the next 9 calls, whatever they are, get a
			// 500, while the rest of the answer comes word by word.
			fake.FailNextStatus("", 9, http.StatusInternalServerError)
		}
		put(n, n, n == 40)
		if n < burstAt {
			flush()
			continue
		}
		select {
		case <-calls:
		case <-time.After(10 * time.Second):
			t.Fatalf("no call after word %d", n)
		}
	}
	flush()
	if len(fake.Calls("chat.startStream")) != 1 {
		t.Fatalf("%d streams started, want 1", len(fake.Calls("chat.startStream")))
	}

	var failed int
	for _, c := range fake.Calls("") {
		if c.Status == http.StatusInternalServerError {
			failed++
		}
	}
	if failed != 9 {
		t.Errorf("%d calls answered 500, want 9", failed)
	}
	var (
		m     slacktest.Message
		found bool
	)
	for _, msg := range fake.Thread("D1", p.Thread) {
		if msg.User == slacktest.BotUserID {
			m, found = msg, true
		}
	}
	if !found {
		t.Fatal("no answer in the thread")
	}
	if want := strings.Join(words, " "); m.Markdown != want {
		t.Errorf("streamed %q\nwant     %q", m.Markdown, want)
	}
	if m.Streaming {
		t.Error("the stream was never stopped")
	}
	if !strings.Contains(string(m.Blocks), "Done in 4s") {
		t.Errorf("no footer: blocks %s", m.Blocks)
	}
	var stopped bool
	for _, c := range fake.Calls("chat.stopStream") {
		stopped = stopped || (c.Status == http.StatusOK && c.Error == "")
	}
	if !stopped {
		t.Errorf("no chat.stopStream succeeded: %+v", fake.Calls("chat.stopStream"))
	}
	if st := o.Stats(); st.Failures != 9 {
		t.Errorf("stats %+v, want 9 failures", st)
	}
}
