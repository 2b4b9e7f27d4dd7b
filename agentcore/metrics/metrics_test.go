package metrics

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// scrape returns m's /metrics page.
func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics = %d", rec.Code)
	}
	return rec.Body.String()
}

func TestMetricsCount(t *testing.T) {
	m := New()
	m.RunStarted("claude")
	m.RunEnded("claude", "completed", 3*time.Second)
	m.InteractionOpened("command_approval")
	m.Persisted(12, time.Millisecond)
	m.ChatAPICall("slack", "chat.update", true)
	body := scrape(t, m)
	for _, want := range []string{
		`threadline_runs_total{agent="claude",status="completed"} 1`,
		`threadline_runs_active{agent="claude"} 0`,
		`threadline_interactions_pending{kind="command_approval"} 1`,
		`threadline_events_persisted_total 12`,
		`threadline_chat_api_rate_limited_total{method="chat.update",platform="slack"} 1`,
		`threadline_run_duration_seconds_count{agent="claude",status="completed"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestMetricsPresentFromStart: before any run, interaction or API call,
// every family is on /metrics with zero values for the known agents,
// statuses, kinds and platform methods.
func TestMetricsPresentFromStart(t *testing.T) {
	m := New()
	m.Known([]string{"claude", "codex"}, map[string][]string{"slack": {"chat.update"}})
	body := scrape(t, m)
	for _, want := range []string{
		`threadline_runs_total{agent="claude",status="completed"} 0`,
		`threadline_runs_total{agent="codex",status="failed"} 0`,
		`threadline_runs_total{agent="codex",status="interrupted"} 0`,
		`threadline_runs_active{agent="claude"} 0`,
		`threadline_run_duration_seconds_count{agent="claude",status="completed"} 0`,
		`threadline_interactions_pending{kind="command_approval"} 0`,
		`threadline_interactions_pending{kind="question"} 0`,
		`threadline_interactions_total{kind="permission",status="approved"} 0`,
		`threadline_interactions_total{kind="question",status="answered"} 0`,
		`threadline_events_persisted_total 0`,
		`threadline_event_commit_seconds_count 0`,
		`threadline_chat_api_calls_total{method="chat.update",platform="slack"} 0`,
		`threadline_chat_api_rate_limited_total{method="chat.update",platform="slack"} 0`,
		`threadline_queue_depth 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics at start lacks %s", want)
		}
	}
	m.SetQueue(func() int { return 4 })
	if body := scrape(t, m); !strings.Contains(body, "threadline_queue_depth 4") {
		t.Error("the queue depth does not come from SetQueue's source")
	}
}

func TestTransportCountsCallsAnd429s(t *testing.T) {
	m := New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "chat.update") {
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	last := func(p string) string { return p[strings.LastIndex(p, "/")+1:] }
	c := &http.Client{Transport: m.Transport("slack", last, nil)}
	for _, p := range []string{"/api/chat.update", "/api/chat.postMessage"} {
		res, err := c.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	body := scrape(t, m)
	for _, want := range []string{
		`threadline_chat_api_calls_total{method="chat.postMessage",platform="slack"} 1`,
		`threadline_chat_api_calls_total{method="chat.update",platform="slack"} 1`,
		`threadline_chat_api_rate_limited_total{method="chat.update",platform="slack"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, `threadline_chat_api_rate_limited_total{method="chat.postMessage"`) {
		t.Error("a 200 answer was counted as rate limited")
	}
}
