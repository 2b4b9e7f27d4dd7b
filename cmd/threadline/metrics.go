// Metrics (prometheus) and the /healthz + /metrics HTTP handlers of serve.

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics holds every Threadline metric. It implements prompt.Observer.
type metrics struct {
	reg          *prometheus.Registry
	runs         *prometheus.CounterVec
	active       *prometheus.GaugeVec
	duration     *prometheus.HistogramVec
	events       prometheus.Counter
	commit       prometheus.Histogram
	pending      *prometheus.GaugeVec
	interactions *prometheus.CounterVec
	chatCalls    *prometheus.CounterVec
	chatLimited  *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threadline_runs_total", Help: "Runs that ended, by agent and status.",
		}, []string{"agent", "status"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "threadline_runs_active", Help: "Runs in progress, by agent.",
		}, []string{"agent"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "threadline_run_duration_seconds", Help: "Run duration, by agent and status.",
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"agent", "status"}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "threadline_events_persisted_total", Help: "Chat events committed to the store.",
		}),
		commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "threadline_event_commit_seconds", Help: "Duration of one group commit of chat events.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}),
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "threadline_interactions_pending", Help: "Approvals and questions waiting for an answer, by kind.",
		}, []string{"kind"}),
		interactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threadline_interactions_total", Help: "Resolved approvals and questions, by kind and status.",
		}, []string{"kind", "status"}),
		chatCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threadline_chat_api_calls_total", Help: "Chat platform API calls, by platform and method.",
		}, []string{"platform", "method"}),
		chatLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "threadline_chat_api_rate_limited_total", Help: "Chat platform API calls answered 429, by platform and method.",
		}, []string{"platform", "method"}),
	}
	m.reg.MustRegister(m.runs, m.active, m.duration, m.events, m.commit, m.pending, m.interactions,
		m.chatCalls, m.chatLimited,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// RunStarted implements prompt.Observer.
func (m *metrics) RunStarted(agent string) { m.active.WithLabelValues(agent).Inc() }

// RunEnded implements prompt.Observer.
func (m *metrics) RunEnded(agent, status string, took time.Duration) {
	m.active.WithLabelValues(agent).Dec()
	m.runs.WithLabelValues(agent, status).Inc()
	m.duration.WithLabelValues(agent, status).Observe(took.Seconds())
}

// InteractionOpened implements prompt.Observer.
func (m *metrics) InteractionOpened(kind string) { m.pending.WithLabelValues(kind).Inc() }

// InteractionClosed implements prompt.Observer.
func (m *metrics) InteractionClosed(kind, status string) {
	m.pending.WithLabelValues(kind).Dec()
	m.interactions.WithLabelValues(kind, status).Inc()
}

// persisted is the run hub's commit hook.
func (m *metrics) persisted(n int, took time.Duration) {
	m.events.Add(float64(n))
	m.commit.Observe(took.Seconds())
}

// ChatAPICall counts a platform API call; limited marks a 429 answer.
func (m *metrics) ChatAPICall(platform, method string, limited bool) {
	m.chatCalls.WithLabelValues(platform, method).Inc()
	if limited {
		m.chatLimited.WithLabelValues(platform, method).Inc()
	}
}

// watchQueue exports the depth of the busy-chat queue.
func (m *metrics) watchQueue(depth func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "threadline_queue_depth", Help: "Messages waiting for a busy chat.",
	}, func() float64 { return float64(depth()) }))
}

// transport counts the chat platform API calls made through base, and the 429s.
func (m *metrics) transport(platform string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(r)
		m.ChatAPICall(platform, apiMethod(platform, r.URL.Path), err == nil && res.StatusCode == http.StatusTooManyRequests)
		return res, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// apiMethod names an API call for a metric label without ids: Slack's method
// ("chat.update"), or Matrix's endpoint ("sync", "rooms/send").
func apiMethod(platform, path string) string {
	if platform == "slack" {
		if i := strings.LastIndex(path, "/"); i >= 0 {
			return path[i+1:]
		}
		return path
	}
	p := path
	if i := strings.Index(p, "/client/"); i >= 0 {
		p = p[i+len("/client/"):]
		if j := strings.IndexByte(p, '/'); j >= 0 { // the version: v3, unstable
			p = p[j+1:]
		}
	}
	parts := strings.Split(p, "/")
	if parts[0] == "rooms" && len(parts) > 2 {
		return "rooms/" + parts[2]
	}
	return parts[0]
}

// healthCheck is one named readiness check of /healthz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// httpHandler serves /healthz and /metrics; front-ends add their routes.
func httpHandler(m *metrics, checks []healthCheck) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		status, code := map[string]string{}, http.StatusOK
		for _, c := range checks {
			if err := c.check(ctx); err != nil {
				status[c.name], code = err.Error(), http.StatusServiceUnavailable
			} else {
				status[c.name] = "ok"
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(status)
	})
	return mux
}
