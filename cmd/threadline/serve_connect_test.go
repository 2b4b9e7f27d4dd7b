// Tests of serve at start: an unreachable Slack is retried with backoff
// (health says connecting) instead of ending serve; a rejected token ends it;
// --http-only serves /healthz and /metrics without a front-end.

package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/bot/slack/slacktest"
	"github.com/threadline-bot/threadline/chatops/chatopstest"
)

func TestServeRetriesUnreachableSlack(t *testing.T) {
	old := slackRetry
	slackRetry.first, slackRetry.max = 200*time.Millisecond, 400*time.Millisecond
	t.Cleanup(func() { slackRetry = old })
	oldInterval, oldRetry := healthInterval, healthRetry
	healthInterval, healthRetry = 50*time.Millisecond, 50*time.Millisecond
	t.Cleanup(func() { healthInterval, healthRetry = oldInterval, oldRetry })

	dir := isolate(t)
	fake := slacktest.New(t)
	fake.ResetNext("auth.test", 3, false) // the first three connections are dropped unanswered
	listen := freePort(t)
	serveConfig(t, slackConfigFile(t, fake, dir, "", map[string]any{"listen": listen}))
	base := "http://" + listen
	chatopstest.WaitFor(t, "/healthz saying slack is connecting", func() bool {
		code, body := get(base + "/healthz")
		return code == 503 && strings.Contains(body, `"slack":"connecting: slack unreachable (attempt`)
	})
	chatopstest.WaitFor(t, "slack connected after the retries", func() bool {
		code, body := get(base + "/healthz")
		return code == 200 && strings.Contains(body, `"slack":"ok"`)
	})
	if n := len(fake.Calls("auth.test")); n < 4 {
		t.Errorf("auth.test answered %d times, want the retries and then the connection", n)
	}
	chatopstest.WaitFor(t, "socket mode opened", func() bool { return len(fake.Calls("apps.connections.open")) > 0 })
}

func TestServeStopsOnRejectedSlackToken(t *testing.T) {
	dir := isolate(t)
	fake := slacktest.New(t)
	fake.FailNext("auth.test", 1, "invalid_auth")
	cfg := slackConfigFile(t, fake, dir, "", map[string]any{"listen": freePort(t)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := cmdServe(ctx, []string{"--config", cfg}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "invalid_auth") || !strings.Contains(err.Error(), "slack.bot_token") {
		t.Fatalf("serve with a rejected token: %v", err)
	}
	if n := len(fake.Calls("auth.test")); n != 1 {
		t.Errorf("a rejected token was retried: %d auth.test calls", n)
	}
}

func TestServeHTTPOnly(t *testing.T) {
	dir := isolate(t)
	listen := freePort(t)
	cfg := writeYAML(t, dir, "database:\n  url: "+filepath.Join(dir, "tl.db")+"\nhost: {isolation: off}\nhttp: {listen: "+listen+"}\n")
	code, _, _, err := run(t, "", "serve", "--config", cfg)
	if code != 1 || err == nil || !strings.Contains(err.Error(), "--http-only") {
		t.Errorf("serve with no front-end: exit %d, %v", code, err)
	}
	serveConfig(t, cfg, "--http-only")
	chatopstest.WaitFor(t, "/healthz of an HTTP-only serve", func() bool {
		code, body := get("http://" + listen + "/healthz")
		return code == 200 && body == "{\"database\":\"ok\"}\n"
	})
	if code, body := get("http://" + listen + "/metrics"); code != 200 || !strings.Contains(body, "threadline_queue_depth 0") {
		t.Errorf("/metrics = %d", code)
	}
}
