package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHTTPHandler(t *testing.T) {
	m := newMetrics()
	m.RunStarted("claude")
	m.RunEnded("claude", "completed", 3*time.Second)
	m.InteractionOpened("command_approval")
	m.persisted(12, time.Millisecond)
	m.ChatAPICall("slack", "chat.update", true)
	dbErr := error(nil)
	srv := httptest.NewServer(httpHandler(m, []healthCheck{
		{"database", func(context.Context) error { return dbErr }},
		{"slack", func(context.Context) error { return nil }},
	}))
	defer srv.Close()
	get := func(path string) (int, string) {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	code, body := get("/metrics")
	for _, want := range []string{
		`threadline_runs_total{agent="claude",status="completed"} 1`,
		`threadline_runs_active{agent="claude"} 0`,
		`threadline_interactions_pending{kind="command_approval"} 1`,
		`threadline_events_persisted_total 12`,
		`threadline_chat_api_rate_limited_total{method="chat.update",platform="slack"} 1`,
		`threadline_run_duration_seconds_count{agent="claude",status="completed"} 1`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %s", code, want)
		}
	}
	if code, body := get("/healthz"); code != 200 || !strings.Contains(body, `"database":"ok"`) {
		t.Errorf("/healthz = %d %s", code, body)
	}
	dbErr = errors.New("connection refused")
	if code, body := get("/healthz"); code != 503 || !strings.Contains(body, `"database":"connection refused"`) || !strings.Contains(body, `"slack":"ok"`) {
		t.Errorf("/healthz with the database down = %d %s", code, body)
	}
}

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

func TestTransportCountsCallsAnd429s(t *testing.T) {
	m := newMetrics()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "chat.update") {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	c := &http.Client{Transport: m.transport("slack", nil)}
	for _, p := range []string{"/api/chat.update", "/api/chat.postMessage"} {
		res, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	m.watchQueue(func() int { return 3 })
	rec := httptest.NewRecorder()
	httpHandler(m, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`threadline_chat_api_calls_total{method="chat.postMessage",platform="slack"} 1`,
		`threadline_chat_api_rate_limited_total{method="chat.update",platform="slack"} 1`,
		`threadline_queue_depth 3`,
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
