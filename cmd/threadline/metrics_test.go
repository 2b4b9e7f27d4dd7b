package main

import (
	"strings"
	"testing"

	"github.com/threadline-bot/threadline/chatops/chatopstest"
)

func TestAPIMethodLabels(t *testing.T) {
	for _, tc := range []struct{ platform, path, want string }{
		{"slack", "/api/chat.update", "chat.update"},
		{"matrix", "/_matrix/client/v3/sync", "sync"},
		{"matrix", "/_matrix/client/v3/rooms/!abc:x/send/m.room.message/txn1", "rooms/send"},
		{"matrix", "/_matrix/client/unstable/keys/upload", "keys"},
	} {
		if got := apiMethod(tc.platform, tc.path); got != tc.want {
			t.Errorf("apiMethod(%s, %s) = %q, want %q", tc.platform, tc.path, got, tc.want)
		}
	}
}

// TestServeMetricsFromStart: a serve that ran nothing yet exports every
// metric family an operator expects on /metrics, with zero values for the
// agents that can run here and the front-end's API calls.
func TestServeMetricsFromStart(t *testing.T) {
	listen := freePort(t)
	serveSlack(t, isolate(t), "", map[string]any{"listen": listen},
		map[string]any{"agents": map[string]any{"local-claude": map[string]any{"base": "claude", "bin": "/bin/true"}}})
	base := "http://" + listen
	chatopstest.WaitFor(t, "/healthz ok", func() bool {
		code, body := get(base + "/healthz")
		return code == 200 && strings.Contains(body, `"slack":"ok"`)
	})
	code, body := get(base + "/metrics")
	if code != 200 {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`threadline_runs_total{agent="local-claude",status="completed"} 0`,
		`threadline_runs_total{agent="local-claude",status="failed"} 0`,
		`threadline_runs_active{agent="local-claude"} 0`,
		`threadline_run_duration_seconds_count{agent="local-claude",status="completed"} 0`,
		`threadline_interactions_pending{kind="command_approval"} 0`,
		`threadline_interactions_total{kind="question",status="answered"} 0`,
		`threadline_events_persisted_total `,
		`threadline_event_commit_seconds_count `,
		`threadline_chat_api_calls_total{method="chat.update",platform="slack"} 0`,
		`threadline_chat_api_rate_limited_total{method="chat.postMessage",platform="slack"} 0`,
		`threadline_queue_depth 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics before the first run lacks %s", want)
		}
	}
}
