package slack_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// toolTurn streams ds evenly over d with a Bash call and a plan update
// halfway.
func toolTurn(ds []string, d time.Duration) chatopstest.Turn {
	return func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		emit(agent.Event{Type: agent.EventSessionUpdated, SessionID: "s", Model: "fake-model"})
		start := time.Now()
		step := d / time.Duration(len(ds))
		for i, s := range ds {
			if w := time.Until(start.Add(time.Duration(i) * step)); w > 0 {
				select {
				case <-time.After(w):
				case <-ctx.Done():
					emit(agent.Event{Type: agent.EventRunInterrupted})
					return nil
				}
			}
			if i == len(ds)/2 {
				emit(agent.Event{Type: agent.EventPlanUpdated, Plan: &agent.Plan{Items: []agent.PlanItem{{Text: "one", Status: agent.PlanCompleted}, {Text: "two", Status: agent.PlanInProgress}}}})
				emit(agent.Event{Type: agent.EventToolStarted, Tool: &agent.Tool{ID: fmt.Sprint("t", i), Name: "Bash", Summary: "Bash: make"}})
				emit(agent.Event{Type: agent.EventToolCompleted, Tool: &agent.Tool{ID: fmt.Sprint("t", i), Name: "Bash", Output: "ok"}})
			}
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: s})
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// BenchmarkParallel10 is issue 17's scenario: 10 threads (one per channel)
// answer at once in one workspace with native streaming, each with a tool
// call and a plan halfway through 20 s (compressed) of text, against the
// fake enforcing Slack's tiers on every method. It reports the calls per
// answer (every Web API call of its thread), the 429s and when the last
// final answer arrived, and checks every answer byte-exact.
func BenchmarkParallel10(b *testing.B) {
	scale := benchScale(10)
	const runs = 10
	for range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		channels := map[string]slackbot.ChannelConfig{}
		for c := range runs {
			channels[fmt.Sprintf("C%d", c+1)] = slackbot.ChannelConfig{Agent: "fake", Allow: []string{"UALLOWED"}}
		}
		fake := slacktest.New(b)
		fake.SetTiers(float64(scale))
		h := start(b, st, options{budget: scaledBudget(scale), channels: channels, fake: fake, streaming: "auto"})
		type thread struct{ channel, root, want string }
		threads := make([]thread, runs)
		for i := range threads {
			// Every run gets the same text: which turn a thread gets depends
			// on the order the runs start.
			ds, _ := deltas(600, "-same")
			// The text after the tool call is its own paragraph.
			want := strings.Join(ds[:len(ds)/2], "") + "\n\n" + strings.Join(ds[len(ds)/2:], "")
			threads[i] = thread{channel: fmt.Sprintf("C%d", i+1), want: want}
			h.stack.Prov.Add(toolTurn(ds, 20*time.Second/time.Duration(scale)))
		}
		for i := range threads {
			threads[i].root = fake.PostUserMessage(threads[i].channel, "", "go")
		}
		b.ResetTimer()
		began := time.Now()
		for _, th := range threads {
			if _, err := fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", th.channel, th.root, "", "go")), 0); err != nil {
				b.Fatal(err)
			}
		}
		var textDone time.Duration
		waitLong(b, "every final answer", func() bool {
			if textDone == 0 {
				all := true
				for _, th := range threads {
					if got, _ := threadText(b, fake, th.channel, th.root); got != th.want {
						all = false
					}
				}
				if all {
					textDone = time.Since(began)
				}
			}
			for _, th := range threads {
				if _, _, ok := finalAnswer(b, fake, th.channel, th.root); !ok || fake.Status(th.channel, th.root) != "" {
					return false
				}
			}
			return true
		})
		took := time.Since(began)
		b.StopTimer()
		for _, th := range threads {
			if got, _ := threadText(b, fake, th.channel, th.root); got != th.want {
				b.Errorf("thread %s: final text is not the answer (%d bytes, want %d)", th.channel, len(got), len(th.want))
			}
		}
		perThread := map[string]int{}
		limited := 0
		byMethod := map[string]int{}
		for _, c := range fake.Calls("") {
			ch := c.Form.Get("channel")
			if ch == "" {
				ch = c.Form.Get("channel_id")
			}
			if !strings.HasPrefix(ch, "C") {
				continue
			}
			perThread[ch]++
			byMethod[c.Method]++
			if c.Status == 429 {
				limited++
				byMethod["429 "+c.Method]++
			}
		}
		total := 0
		for _, n := range perThread {
			total += n
		}
		b.ReportMetric(float64(total)/runs, "calls/answer")
		b.ReportMetric(float64(limited), "429s")
		b.ReportMetric(took.Seconds()*float64(scale), "s-to-all-finals(real-time)")
		b.ReportMetric(textDone.Seconds()*float64(scale), "s-to-all-texts(real-time)")
		b.Logf("scale %d: %d runs, %.1f calls per answer, %d 429s, every whole text shown after %s real time, all finals after %s real time; calls by method %v",
			scale, runs, float64(total)/runs, limited, textDone*time.Duration(scale), took*time.Duration(scale), byMethod)
		if limited > 0 {
			b.Errorf("%d 429s", limited)
		}
	}
}
