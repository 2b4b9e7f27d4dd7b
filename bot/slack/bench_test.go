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
	"github.com/threadline-bot/threadline/chatops/outbox"
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
	d := outbox.Budget{}.WithDefaults()
	scaled := func(r chatops.Rate) chatops.Rate { return chatops.Rate{PerMinute: r.PerMinute * f, Burst: r.Burst} }
	return chatops.Budget{
		MinInterval: time.Second / time.Duration(scale),
		Post:        scaled(d.Post), Start: scaled(d.Start), Update: scaled(d.Update), Append: scaled(d.Append),
		Stop: scaled(d.Stop), Delete: scaled(d.Delete), Status: scaled(d.Status),
	}
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

// BenchmarkStream10kDeltas streams 10,000 (and 50,000) deltas over
// (compressed) 60 s through the renderer into the fake with Slack's tiers
// enforced, in the default mode (native streaming) and with streaming off,
// and reports the API calls of the answer's messages (posts, edits, stream
// starts, appends and stops), the calls around them (the status indicator,
// the companion message of the Stop button and its deletion), the 429s, the
// first-text latency and whether the final text is byte-exact. Both modes
// must stay within one call per second for the answer: at most 62 calls.
func BenchmarkStream10kDeltas(b *testing.B) {
	for _, mode := range []string{"auto", "off"} {
		for _, n := range []int{10000, 50000} {
			b.Run(fmt.Sprintf("streaming=%s/deltas=%d", mode, n), func(b *testing.B) { benchStream(b, mode, n) })
		}
	}
}

func benchStream(b *testing.B, mode string, n int) {
	scale := benchScale(10)
	for i := range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		fake := slacktest.New(b)
		fake.SetTiers(float64(scale))
		h := start(b, st, options{budget: scaledBudget(scale), streaming: mode, fake: fake})
		calls := h.fake.Listen()
		ds, want := deltas(n, strconv.Itoa(i))
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
		waitLong(b, "the final answer", func() bool {
			_, _, ok := finalAnswer(b, h.fake, "C1", root)
			return ok && h.fake.Status("C1", root) == ""
		})
		b.StopTimer()
		got, msgs := threadText(b, h.fake, "C1", root)
		if fs := h.fake.Files(); len(fs) == 1 {
			// Longer than the answer's messages hold: the whole answer is
			// the file.
			got = string(fs[0].Content)
		}
		if got != want {
			b.Fatalf("final text differs: %d bytes, want %d", len(got), len(want))
		}
		var (
			answer, around, limited int
			visible                 time.Time
			byMethod                = map[string]int{}
		)
	drain:
		for {
			select {
			case c := <-calls:
				byMethod[c.Method]++
				if c.Status == 429 {
					limited++
					byMethod["429 "+c.Method]++
				}
				switch c.Method {
				case "chat.postMessage":
					if c.Form.Get("text") == outbox.ControlsText {
						around++
						continue
					}
					answer++
				case "chat.update", "chat.startStream", "chat.appendStream", "chat.stopStream",
					"files.getUploadURLExternal", "files.completeUploadExternal":
					answer++
				case "chat.delete", "assistant.threads.setStatus":
					around++
					continue
				default:
					continue
				}
				if visible.IsZero() && c.Status == 200 && (strings.Contains(c.Form.Get("blocks"), "FIRST") || strings.Contains(c.Form.Get("chunks"), "FIRST")) {
					visible = c.At
				}
			default:
				break drain
			}
		}
		mu.Lock()
		lat := visible.Sub(first)
		mu.Unlock()
		b.ReportMetric(float64(answer), "calls/answer")
		b.ReportMetric(float64(around), "status+stop-calls")
		b.ReportMetric(float64(msgs), "messages")
		b.ReportMetric(float64(limited), "429s")
		b.ReportMetric(float64(lat.Milliseconds()*int64(scale)), "first-visible-ms(real-time)")
		b.Logf("streaming %s, %d deltas, scale %d: %d calls for %d messages of %d bytes (+%d status/Stop calls, %d 429s); first text visible %s after the first delta (%s in real time); by method %v",
			mode, n, scale, answer, msgs, len(want), around, limited, lat, lat*time.Duration(scale), byMethod)
		if answer > 62 {
			b.Errorf("%d API calls for the answer, want at most 62 (one a second)", answer)
		}
		if limited > 0 {
			b.Errorf("%d 429s", limited)
		}
		if lat*time.Duration(scale) > time.Second {
			b.Errorf("first text visible %s (real time) after the first delta, want at most 1 s", lat*time.Duration(scale))
		}
	}
}

// Benchmark50Runs runs 50 answers at once in one workspace (5 channels, 10
// threads each) against the fake enforcing Slack's tiers, with streaming off
// and native streaming, and checks every final
// message and that nothing is called while a Retry-After is pending.
func Benchmark50Runs(b *testing.B) {
	for _, mode := range []string{"off", "auto"} {
		b.Run("streaming="+mode, func(b *testing.B) { bench50(b, mode) })
	}
}

func bench50(b *testing.B, mode string) {
	scale := benchScale(20)
	const runs = 50
	for range b.N {
		st := storetest.Open(b, store.DialectSQLite)
		channels := map[string]slackbot.ChannelConfig{}
		for c := range 5 {
			channels[fmt.Sprintf("C%d", c+1)] = slackbot.ChannelConfig{Agent: "fake", Allow: []string{"UALLOWED"}}
		}
		fake := slacktest.New(b)
		fake.SetTiers(float64(scale))
		h := start(b, st, options{budget: scaledBudget(scale), channels: channels, fake: fake, streaming: mode})
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
			case "auth.test", "apps.connections.open":
				continue
			}
			total++
			if c.At.Before(pausedUntil) {
				storm++
			}
			if c.Status == 429 {
				limited++
				pausedUntil = c.At.Add(time.Second)
				b.Logf("429 on %s", c.Method)
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
