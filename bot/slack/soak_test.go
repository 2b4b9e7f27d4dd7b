package slack_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/store"
	"github.com/threadline-bot/threadline/store/storetest"
)

// TestSoakWithFaults runs 20 answers at once through the fake while it
// throws 429s with Retry-After, drops connections (before and after a call took
// effect) and resets the Socket Mode connection. Every thread must end with its
// own answer byte-exact, no thread may get a second answer message, and no call
// may go out while a Retry-After is pending.
func TestSoakWithFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("soak")
	}
	st := storetest.Open(t, store.DialectSQLite)
	const runs = 20
	channels := map[string]slackbot.ChannelConfig{}
	for c := range 4 {
		channels[fmt.Sprintf("C%d", c+1)] = slackbot.ChannelConfig{Agent: "fake", Allow: []string{"UALLOWED"}}
	}
	fake := slacktest.New(t)
	h := start(t, st, options{channels: channels, fake: fake, budget: scaledBudget(10)})
	type thread struct{ channel, root, want string }
	threads := make([]thread, runs)
	var (
		mu    sync.Mutex
		first time.Time
	)
	for i := range runs {
		ds, want := deltas(200, fmt.Sprintf("-%02d", i))
		threads[i] = thread{channel: fmt.Sprintf("C%d", i%4+1), want: want}
		h.stack.Prov.Add(paced(ds, 3*time.Second, &first, &mu))
	}
	for i := range threads {
		threads[i].root = fake.PostUserMessage(threads[i].channel, "", "go")
	}
	for _, th := range threads {
		if _, err := fake.Envelope("events_api", callback(eventID(), mention("UALLOWED", th.channel, th.root, "", "go")), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Faults while the answers stream (for 5 s: the streams last 3 s).
	stopFaults := make(chan struct{})
	faultsDone := make(chan struct{})
	go func() {
		defer close(faultsDone)
		for i := 0; i < 16; i++ {
			select {
			case <-stopFaults:
				return
			case <-time.After(300 * time.Millisecond):
			}
			switch i % 5 {
			case 0:
				fake.RateLimitNext("chat.update", 2, 1)
			case 1:
				fake.ResetNext("chat.update", 1, false)
			case 2:
				fake.ResetNext("chat.update", 1, true)
			case 3:
				fake.ResetNext("chat.postMessage", 1, true)
				fake.RateLimitNext("chat.postMessage", 1, 1)
			case 4:
				if i == 4 {
					fake.Disconnect() // Socket Mode reconnects
				}
			}
		}
	}()
	// Waits on progress, not on a clock: it fails only once nothing moved
	// (no answer finished, no call reached the fake) for a minute.
	lastDone, lastCalls, moved := -1, -1, time.Now()
	for {
		done := 0
		var stuck []thread
		for _, th := range threads {
			if _, _, ok := finalAnswer(t, fake, th.channel, th.root); ok {
				done++
			} else {
				stuck = append(stuck, th)
			}
		}
		if done == runs {
			break
		}
		if calls := len(fake.Calls("")); done != lastDone || calls != lastCalls {
			lastDone, lastCalls, moved = done, calls, time.Now()
		}
		if time.Since(moved) > time.Minute {
			close(stopFaults)
			for _, th := range stuck {
				for _, m := range fake.Thread(th.channel, th.root) {
					t.Logf("unfinished %s/%s: message %s: %.300s %.300s", th.channel, th.root, m.TS, m.Text, m.Blocks)
				}
			}
			t.Fatalf("%d of %d answers finished; nothing moved for a minute", done, runs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	close(stopFaults)
	<-faultsDone

	answers := map[string]bool{}
	for _, th := range threads {
		got, n := threadText(t, fake, th.channel, th.root)
		if n != 1 {
			t.Errorf("thread %s/%s: %d answer messages, want 1 (a duplicate post?)", th.channel, th.root, n)
		}
		if answers[got] {
			t.Errorf("thread %s/%s: an answer shown twice", th.channel, th.root)
		}
		answers[got] = true
		ok := false
		for _, other := range threads {
			ok = ok || got == other.want
		}
		if !ok {
			t.Errorf("thread %s/%s: final text is not a run's answer (%d bytes): %q", th.channel, th.root, len(got), got)
		}
	}
	var calls, limited, resets, storm int
	pausedUntil := map[string]time.Time{}
	for _, c := range fake.Calls("") {
		if c.Method != "chat.update" && c.Method != "chat.postMessage" {
			continue
		}
		calls++
		if c.At.Before(pausedUntil[c.Method]) {
			storm++
		}
		switch {
		case c.Reset:
			resets++
		case c.Status == 429:
			limited++
			pausedUntil[c.Method] = c.At.Add(time.Second)
		}
	}
	t.Logf("%d runs: %d calls, %d answered 429, %d connections dropped, %d calls during a Retry-After", runs, calls, limited, resets, storm)
	if limited == 0 || resets == 0 {
		t.Errorf("the faults were not injected (%d 429s, %d resets)", limited, resets)
	}
	if storm > 0 {
		t.Errorf("%d calls went out while a Retry-After was pending", storm)
	}
}
