package slack_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// timedTurn streams ds evenly over d with a Bash call and a plan update
// halfway, calling last (when not nil) just before the last delta goes out.
func timedTurn(ds []string, d time.Duration, last func()) chatopstest.Turn {
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
			if i == len(ds)-1 && last != nil {
				last()
			}
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: s})
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// BenchmarkParallel10 is issue 17's scenario, measured as issue 31 asks:
// 10 threads mentioned at once in one workspace with native streaming, each
// answering 40 words over 20 s with a tool call and a plan halfway, against
// the fake enforcing Slack's tiers on every method (benchParallel).
func BenchmarkParallel10(b *testing.B) {
	for _, sessions := range []bool{false, true} {
		b.Run(fmt.Sprintf("sessions=%t", sessions), func(b *testing.B) { benchParallel(b, 10, sessions) })
	}
}

// BenchmarkParallel is BenchmarkParallel10 with 1, 10 and 50 answers at
// once, without and with agent sessions (Slack's own Stop button).
func BenchmarkParallel(b *testing.B) {
	for _, runs := range []int{1, 10, 50} {
		for _, sessions := range []bool{false, true} {
			b.Run(fmt.Sprintf("threads=%d/sessions=%t", runs, sessions), func(b *testing.B) { benchParallel(b, runs, sessions) })
		}
	}
}

// benchParallel answers runs mentions at once (threads spread over ten
// channels) and reports, in real time (SLACK_BENCH_SCALE undone): the p95
// over threads of the time from a mention's delivery to the first thing
// its thread shows (a status, a session status, a message or a stream),
// the p95 of the time from an answer's last token to its final state (the
// last call of its message: stream stopped, footer shown; and its Stop
// companion gone), every Web API call of the threads per answer, and the
// 429s. Every answer is checked byte-exact.
func benchParallel(b *testing.B, runs int, sessions bool) {
	scale := benchScale(10)
	const words = 40
	for range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		channels := map[string]slackbot.ChannelConfig{}
		for c := range min(runs, 10) {
			channels[fmt.Sprintf("C%d", c+1)] = slackbot.ChannelConfig{Agent: "fake", Allow: []string{"UALLOWED"}}
		}
		fake := slacktest.New(b)
		fake.SetTiers(float64(scale))
		if sessions {
			fake.AgentSessions("")
		}
		h := start(b, st, options{budget: scaledBudget(scale), channels: channels, fake: fake, streaming: "auto"})
		type thread struct {
			channel, root string
			mentioned     time.Time
		}
		var (
			mu   sync.Mutex
			last = map[string]time.Time{} // by the answer's text
		)
		wants := make([]string, runs)
		for i := range runs {
			ds := make([]string, words)
			for w := range ds {
				ds[w] = fmt.Sprintf("w%d-%d ", w, i)
			}
			want := strings.Join(ds[:len(ds)/2], "") + "\n\n" + strings.Join(ds[len(ds)/2:], "")
			wants[i] = want
			h.stack.Prov.Add(timedTurn(ds, 20*time.Second/time.Duration(scale), func() {
				mu.Lock()
				last[want] = time.Now()
				mu.Unlock()
			}))
		}
		threads := make([]thread, runs)
		for i := range threads {
			threads[i].channel = fmt.Sprintf("C%d", i%10+1)
			threads[i].root = fake.PostUserMessage(threads[i].channel, "", "go")
		}
		b.ResetTimer()
		for i, th := range threads {
			threads[i].mentioned = time.Now()
			if _, err := fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", th.channel, th.root, "", "go")), 0); err != nil {
				b.Fatal(err)
			}
		}
		// The companion's deletion is seen by polling (a deleted message
		// leaves no trace in the fake): closely, so as not to blur it.
		gone := make([]time.Time, runs)
		deadline := time.Now().Add(5 * time.Minute)
		for {
			done := 0
			for i, th := range threads {
				if !gone[i].IsZero() {
					done++
					continue
				}
				_, _, ok := finalAnswer(b, fake, th.channel, th.root)
				if !ok || fake.Status(th.channel, th.root) != "" {
					continue
				}
				companion := false
				for _, m := range fake.Thread(th.channel, th.root) {
					companion = companion || m.Text == outbox.ControlsText
				}
				if !companion {
					gone[i] = time.Now()
				}
			}
			if done == runs {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("timed out waiting for every final answer")
			}
			time.Sleep(2 * time.Millisecond)
		}
		b.StopTimer()
		calls := fake.Calls("")
		var (
			signs, closes  []time.Duration
			total, limited int
			byMethod       = map[string]int{}
		)
		for _, c := range calls {
			if ch := cmpOr(c.Form.Get("channel"), c.Form.Get("channel_id")); strings.HasPrefix(ch, "C") {
				total++
				byMethod[c.Method]++
				if c.Status == 429 {
					limited++
					byMethod["429 "+c.Method]++
				}
			}
		}
		for i, th := range threads {
			got, _ := threadText(b, fake, th.channel, th.root)
			mu.Lock()
			lastToken, ok := last[got]
			mu.Unlock()
			if !ok || !slices.Contains(wants, got) {
				b.Fatalf("thread %s/%s: final text is not an answer (%d bytes)", th.channel, th.root, len(got))
			}
			ts := map[string]bool{}
			for _, m := range fake.Thread(th.channel, th.root) {
				ts[m.TS] = true
			}
			var sign, final time.Time
			for _, c := range calls {
				if c.Status != 200 || c.Error != "" || cmpOr(c.Form.Get("channel"), c.Form.Get("channel_id")) != th.channel {
					continue
				}
				switch c.Method {
				case "assistant.threads.setStatus", "agents.sessions.setStatus", "chat.postMessage", "chat.startStream":
					if c.Form.Get("thread_ts") == th.root && sign.IsZero() {
						sign = c.At
					}
				case "chat.appendStream", "chat.stopStream", "chat.update":
					if ts[c.Form.Get("ts")] {
						final = later(final, c.At)
					}
				}
			}
			if sign.IsZero() {
				b.Fatalf("thread %s/%s showed no sign", th.channel, th.root)
			}
			final = later(final, gone[i])
			signs = append(signs, sign.Sub(th.mentioned))
			closes = append(closes, final.Sub(lastToken))
		}
		real := func(d time.Duration) float64 { return d.Seconds() * float64(scale) }
		b.ReportMetric(real(p95(signs)), "s-first-sign-p95")
		b.ReportMetric(real(p95(closes)), "s-close-p95")
		b.ReportMetric(float64(total)/float64(runs), "calls/answer")
		b.ReportMetric(float64(limited), "429s")
		b.Logf("scale %d, %d threads, sessions %t: first sign p95 %.2fs (max %.2fs), close p95 %.2fs (max %.2fs) real time; %.1f calls per answer, %d 429s; calls by method %v",
			scale, runs, sessions, real(p95(signs)), real(slices.Max(signs)), real(p95(closes)), real(slices.Max(closes)),
			float64(total)/float64(runs), limited, byMethod)
	}
}

// p95 is the 95th percentile of ds (nearest rank).
func p95(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[max(0, (len(s)*95+99)/100-1)]
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
