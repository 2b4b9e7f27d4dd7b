// The memory of `threadline serve` (issue 19, target 6): idle with Slack
// connected, and with 100 runs streaming at once.

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/providers/providertest"
)

// Limits of target 6, and the margin the test keeps below the busy one.
const (
	idleRSSLimit = 30 << 20
	busyRSSLimit = 200 << 20
	rssMargin    = 0.9
	busyRuns     = 100
)

// TestServeRSS runs `threadline serve` as its own process (the test binary
// as the CLI) against the Slack fake, with fakeStreamingClaude (the Go fake
// CLI: fakeChunks deltas fakeTick apart) as the agent. It measures the
// serve process's resident memory once Slack is connected and idle, then
// while busyRuns mentions, each in a thread of its own, stream at once;
// every answer must end with all its deltas in order. It fails above 30 MB
// idle or 90 % of 200 MB busy, and logs the figures.
func TestServeRSS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 100 agent processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// serve is the threadline binary as built for users ($THREADLINE_BIN,
	// else built here as scripts/release.sh builds it: static, CGO_ENABLED=0,
	// before isolate leaves the package directory): the test binary maps its
	// own code and the testing package too (about 2 MB more resident), and a
	// cgo build maps libc and the dynamic loader (about 1 MB).
	bin := os.Getenv("THREADLINE_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "threadline")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	dir := isolate(t)
	fake := slacktest.New(t)
	listen := freePort(t)
	cfg := slackConfigFile(t, fake, dir, "", map[string]any{"listen": listen}, map[string]any{
		"workdir": filepath.Join(dir, "work"),
		"agents":  map[string]any{"claude": map[string]any{"bin": exe, "env": map[string]string{testRoleEnv: "fakeclaude"}}},
		"slack": map[string]any{"app_token": slacktest.AppToken, "bot_token": slacktest.BotToken, "api_url": fake.APIURL(),
			"channels": map[string]any{"C1": map[string]any{"agent": "claude", "allow": []string{"UDEV"}}}},
	})
	if err := os.MkdirAll(filepath.Join(dir, "work"), 0o755); err != nil {
		t.Fatal(err)
	}
	serve := exec.Command(bin, "serve", "--config", cfg)
	var logs lockedBuffer
	serve.Stdout, serve.Stderr = &logs, &logs
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = serve.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(providertest.Scale(30 * time.Second)):
			_ = serve.Process.Kill()
			<-done
		}
	})
	pid := serve.Process.Pid
	if err := fake.WaitConnected(providertest.Scale(20 * time.Second)); err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	// Idle: what serve holds once it is connected and has settled (the
	// lowest of a few samples, so that the start's garbage is not counted).
	idle := int64(-1)
	for range 10 {
		time.Sleep(100 * time.Millisecond)
		if rss := memStatus(t, pid, "VmRSS"); idle < 0 || rss < idle {
			idle = rss
		}
	}

	_, metrics := get("http://" + listen + "/metrics")
	var heap []string
	for l := range strings.Lines(metrics) {
		for _, k := range []string{"go_memstats_heap_inuse_bytes ", "go_memstats_sys_bytes ", "go_memstats_stack_inuse_bytes ", "go_goroutines "} {
			if strings.HasPrefix(l, k) {
				heap = append(heap, strings.TrimSpace(l))
			}
		}
	}
	anon, file := memStatus(t, pid, "RssAnon"), memStatus(t, pid, "RssFile")
	t.Logf("idle serve (%s): RssAnon %.1f MB, RssFile %.1f MB; %s", filepath.Base(bin), mb(anon), mb(file), strings.Join(heap, ", "))

	// Busy: busyRuns mentions at once, the peak sampled while they stream.
	want := make([]string, fakeChunks)
	for i := range want {
		want[i] = fmt.Sprintf("chunk %d", i+1)
	}
	answer := strings.Join(want, " ")
	roots := make([]string, busyRuns)
	for i := range roots {
		roots[i] = fake.PostUserMessage("C1", "", "stream "+strconv.Itoa(i))
	}
	stop := make(chan struct{})
	var peak int64
	var active float64 // the most runs /metrics saw active at once
	var sampling sync.WaitGroup
	sampling.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				if rss, err := readMemStatus(pid, "VmRSS"); err == nil {
					peak = max(peak, rss)
				}
				if n%5 == 0 {
					active = max(active, metric(listen, `threadline_runs_active{agent="claude"}`))
				}
			}
		}
	})
	start := time.Now()
	mentionStreams(t, fake, roots)
	done := func(root string) bool {
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(providertest.Scale(3 * time.Minute))
	for pending := roots; len(pending) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d answers not done after %s\n%s", len(pending), busyRuns, time.Since(start), tail(logs.String(), 4096))
		}
		var still []string
		for _, root := range pending {
			if !done(root) {
				still = append(still, root)
			}
		}
		pending = still
		time.Sleep(50 * time.Millisecond)
	}
	took := time.Since(start)
	close(stop)
	sampling.Wait()
	hwm := memStatus(t, pid, "VmHWM")

	// No event lost: every answer holds all the deltas, in order.
	for i, root := range roots {
		var text string
		for _, m := range fake.Thread("C1", root) {
			if strings.Contains(string(m.Blocks), "Done in") {
				text = m.Markdown + "\n" + string(m.Blocks)
			}
		}
		if !strings.Contains(text, answer) {
			t.Errorf("answer %d lacks the %d deltas in order:\n%s", i, fakeChunks, text)
		}
	}
	t.Logf("serve RSS: idle %.1f MB (limit %d MB); %d runs streaming %d deltas each (at most %.0f active at once): peak sampled %.1f MB, VmHWM %.1f MB (limit %d MB), all answers done in %s",
		mb(idle), idleRSSLimit>>20, busyRuns, fakeChunks, active, mb(peak), mb(hwm), busyRSSLimit>>20, took.Round(time.Millisecond))
	if active < busyRuns/2 {
		t.Errorf("at most %.0f runs were active at once, want about %d", active, busyRuns)
	}
	// Idle is held to the limit itself: about 22 MB of it are the binary's
	// own pages (RssFile), which no package's code can shrink, so it runs
	// at about 97 % of the limit (see the log; every MB of binary costs one).
	if idle > idleRSSLimit {
		t.Errorf("idle RSS %.1f MB is over %d MB", mb(idle), idleRSSLimit>>20)
	}
	if float64(hwm) > rssMargin*busyRSSLimit {
		t.Errorf("peak RSS %.1f MB with %d runs is over %.0f%% of %d MB", mb(hwm), busyRuns, 100*rssMargin, busyRSSLimit>>20)
	}
}

// memStatus is a field of /proc/pid/status, in bytes (VmRSS, VmHWM).
func memStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	n, err := readMemStatus(pid, field)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func readMemStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// metric is the value of a series (name and labels) on serve's /metrics (0
// when it cannot be read).
func metric(listen, name string) float64 {
	_, body := get("http://" + listen + "/metrics")
	for l := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f
		}
	}
	return 0
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// tail is the end of s, at most n bytes.
func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// mentionStreams sends the app_mention "stream <i>" of each thread root in
// C1 (Socket Mode envelopes, ids Ev<i>), each acknowledged before the next.
func mentionStreams(t *testing.T, fake *slacktest.Server, roots []string) {
	t.Helper()
	for i, root := range roots {
		env, err := fake.Envelope("events_api", map[string]any{"type": "event_callback", "team_id": slacktest.TeamID,
			"api_app_id": slacktest.AppID, "event_id": "Ev" + strconv.Itoa(i), "event_time": time.Now().Unix(),
			"event": map[string]any{"type": "app_mention", "user": "UDEV", "channel": "C1", "ts": root, "event_ts": root,
				"text": "<@" + slacktest.BotUserID + "> stream " + strconv.Itoa(i)}}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fake.WaitAck(env, providertest.Scale(10*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
}
