package slack_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// benchScale compresses time: every duration, rate and limit of a benchmark
// is scaled by it (SLACK_BENCH_SCALE, default 10), so that 60 s of streaming
// take 6 s with the same calls per streamed second. SLACK_BENCH_SCALE=1 runs
// in real time.
func benchScale(def int) int {
	if s, err := strconv.Atoi(os.Getenv("SLACK_BENCH_SCALE")); err == nil && s > 0 {
		return s
	}
	return def
}

// scaledBudget is the default budget with time compressed by scale.
func scaledBudget(scale int) chatops.Budget {
	f := float64(scale)
	return chatops.Budget{
		MinInterval: time.Second / time.Duration(scale),
		Post:        chatops.Rate{PerMinute: 60 * f, Burst: 5},
		Update:      chatops.Rate{PerMinute: 50 * f, Burst: 5},
		Append:      chatops.Rate{PerMinute: 100 * f, Burst: 5},
	}
}

// tier3 limits the fake's chat.update like Slack's Tier 3, and
// chat.postMessage to about one a second, both time-compressed.
func tier3(fake *slacktest.Server, scale int) {
	f := float64(scale)
	fake.SetLimit("chat.update", slacktest.Rate{PerMinute: 50 * f, Burst: 5})
	fake.SetLimit("chat.postMessage", slacktest.Rate{PerMinute: 60 * f, Burst: 10})
}

// paced emits deltas evenly over d and records when the first went out.
func paced(deltas []string, d time.Duration, first *time.Time, mu *sync.Mutex) chatopstest.Turn {
	return func(ctx context.Context, _ agent.RunRequest, emit func(agent.Event)) error {
		start := time.Now()
		step := d / time.Duration(len(deltas))
		for i, s := range deltas {
			if w := time.Until(start.Add(time.Duration(i) * step)); w > 0 {
				time.Sleep(w)
			}
			if i == 0 {
				mu.Lock()
				*first = time.Now()
				mu.Unlock()
			}
			emit(agent.Event{Type: agent.EventAssistantDelta, Text: s})
		}
		emit(agent.Event{Type: agent.EventRunCompleted})
		return nil
	}
}

// deltas returns n short deltas (a line break every 40), the first "FIRST ".
func deltas(n int, tag string) ([]string, string) {
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		s := string(rune('a' + i%26))
		switch {
		case i == 0:
			s = "FIRST" + tag + " "
		case i%40 == 39:
			s = "\n"
		}
		out[i] = s
		b.WriteString(s)
	}
	return out, b.String()
}

// threadText joins the answer messages of a thread.
func threadText(t testing.TB, fake *slacktest.Server, channel, root string) (string, int) {
	var b strings.Builder
	n := 0
	for _, m := range fake.Thread(channel, root) {
		if m.TS == root {
			continue
		}
		body, _ := blockText(t, m)
		b.WriteString(body)
		n++
	}
	return b.String(), n
}

// waitLong polls cond for up to five minutes (a real-time benchmark run).
func waitLong(b *testing.B, what string, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkStream10kDeltas streams 10,000 deltas over (compressed) 60 s
// through the renderer into the fake with Tier 3 enforced, and reports the
// API calls for the answer, the first-text latency and whether the final text
// is byte-exact.
func BenchmarkStream10kDeltas(b *testing.B) {
	scale := benchScale(10)
	for i := range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		h := start(b, st, options{budget: scaledBudget(scale)})
		tier3(h.fake, scale)
		calls := h.fake.Listen()
		ds, want := deltas(10000, strconv.Itoa(i))
		var (
			first time.Time
			mu    sync.Mutex
		)
		h.stack.Prov.Add(paced(ds, 60*time.Second/time.Duration(scale), &first, &mu))
		root := h.fake.PostUserMessage("C1", "", "stream")
		b.ResetTimer()
		if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", "C1", root, "", "stream")), 0); err != nil {
			b.Fatal(err)
		}
		waitLong(b, "the final answer", func() bool { _, _, ok := finalAnswer(b, h.fake, "C1", root); return ok })
		b.StopTimer()
		got, msgs := threadText(b, h.fake, "C1", root)
		if got != want {
			b.Fatalf("final text differs: %d bytes, want %d", len(got), len(want))
		}
		var (
			n, limited int
			visible    time.Time
		)
	drain:
		for {
			select {
			case c := <-calls:
				if c.Form.Get("thread_ts") != root && c.Form.Get("channel") != "C1" {
					continue
				}
				switch c.Method {
				case "chat.postMessage", "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream":
					n++
					if c.Status == 429 {
						limited++
					}
					if visible.IsZero() && c.Status == 200 && strings.Contains(c.Form.Get("blocks"), "FIRST") {
						visible = c.At
					}
				}
			default:
				break drain
			}
		}
		mu.Lock()
		lat := visible.Sub(first)
		mu.Unlock()
		b.ReportMetric(float64(n), "calls/answer")
		b.ReportMetric(float64(msgs), "messages")
		b.ReportMetric(float64(limited), "429s")
		b.ReportMetric(float64(lat.Milliseconds()*int64(scale)), "first-visible-ms(real-time)")
		b.Logf("scale %d: %d calls (%d 429s) for %d messages of %d bytes; first text visible %s after the first delta (%s in real time)",
			scale, n, limited, msgs, len(want), lat, lat*time.Duration(scale))
		if n > 65 {
			b.Errorf("%d API calls for the answer, want at most 65", n)
		}
		if lat*time.Duration(scale) > time.Second {
			b.Errorf("first text visible %s (real time) after the first delta, want at most 1 s", lat*time.Duration(scale))
		}
	}
}

// Benchmark50Runs runs 50 answers at once in one workspace (5 channels, 10
// threads each) against the fake enforcing Tier 3, and checks every final
// message and that nothing is called while a Retry-After is pending.
func Benchmark50Runs(b *testing.B) {
	scale := benchScale(20)
	const runs = 50
	for range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		channels := map[string]slackbot.ChannelConfig{}
		for c := range 5 {
			channels[fmt.Sprintf("C%d", c+1)] = slackbot.ChannelConfig{Agent: "fake", Allow: []string{"UALLOWED"}}
		}
		fake := slacktest.New(b)
		tier3(fake, scale)
		h := start(b, st, options{budget: scaledBudget(scale), channels: channels, fake: fake})
		type thread struct{ channel, root, want string }
		threads := make([]thread, runs)
		var (
			mu    sync.Mutex
			first time.Time
		)
		// The scripted provider serves turns in order; every run gets the same
		// text shape with its own tag.
		for i := range runs {
			ds, want := deltas(400, fmt.Sprintf("-%02d", i))
			threads[i] = thread{channel: fmt.Sprintf("C%d", i%5+1), want: want}
			h.stack.Prov.Add(paced(ds, 30*time.Second/time.Duration(scale), &first, &mu))
		}
		for i := range threads {
			threads[i].root = h.fake.PostUserMessage(threads[i].channel, "", "go")
		}
		b.ResetTimer()
		began := time.Now()
		for i, th := range threads {
			if _, err := h.fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", th.channel, th.root, "", "go")), 0); err != nil {
				b.Fatal(err)
			}
			_ = i
		}
		waitLong(b, "every final answer", func() bool {
			for _, th := range threads {
				if _, _, ok := finalAnswer(b, h.fake, th.channel, th.root); !ok {
					return false
				}
			}
			return true
		})
		took := time.Since(began)
		b.StopTimer()
		// Each thread got one run; which text it got depends on the order
		// the runs started, so match by tag.
		for _, th := range threads {
			got, _ := threadText(b, h.fake, th.channel, th.root)
			ok := false
			for _, other := range threads {
				if got == other.want {
					ok = true
				}
			}
			if !ok {
				b.Errorf("thread %s/%s: final text is not any run's answer (%d bytes)", th.channel, th.root, len(got))
			}
		}
		var (
			total, limited, storm int
			pausedUntil           time.Time
		)
		for _, c := range h.fake.Calls("") {
			switch c.Method {
			case "chat.postMessage", "chat.update":
			default:
				continue
			}
			total++
			if c.At.Before(pausedUntil) {
				storm++
			}
			if c.Status == 429 {
				limited++
				pausedUntil = c.At.Add(time.Second)
			}
		}
		b.ReportMetric(float64(total), "calls")
		b.ReportMetric(float64(limited), "429s")
		b.ReportMetric(float64(storm), "calls-during-retry-after")
		b.ReportMetric(took.Seconds()*float64(scale), "s-to-all-finals(real-time)")
		b.Logf("scale %d: %d runs, %d calls, %d 429s, %d calls during a Retry-After; all finals after %s (%s in real time)",
			scale, runs, total, limited, storm, took, took*time.Duration(scale))
		if storm > 0 {
			b.Errorf("%d calls while a Retry-After was pending", storm)
		}
		if limited > runs/5 {
			b.Errorf("%d 429s for %d runs: the budget does not match the tier", limited, runs)
		}
	}
}
