// Package metrics holds Threadline's Prometheus metrics: runs by agent and
// status, run duration, pending and resolved interactions, persisted chat
// events and their group commits, chat platform API calls and their 429s,
// and the busy-chat queue depth. Every family is exported from the start,
// with zero values for the label values known then (Known), so that a
// dashboard or an alert sees 0, not "no data", before the first run.
package metrics

import (
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/runhub"
)

// Metrics holds every Threadline metric. It implements prompt.Observer.
type Metrics struct {
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
	// queue reports the busy-chat queue depth (SetQueue); nil is 0.
	queue atomic.Pointer[func() int]
}

// RunStatuses are the terminal statuses a run ends with.
var RunStatuses = []runhub.RunStatus{runhub.StatusCompleted, runhub.StatusFailed, runhub.StatusInterrupted}

// InteractionKinds are the kinds of agent requests.
var InteractionKinds = []agent.InteractionKind{agent.KindCommandApproval, agent.KindFileChangeApproval, agent.KindPermission,
	agent.KindQuestion, agent.KindElicitation, agent.KindToolCall, agent.KindUnknown}

// InteractionStatuses are the ways an interaction is resolved.
var InteractionStatuses = []string{agent.StatusApproved, agent.StatusApprovedForSession, agent.StatusDeclined,
	agent.StatusCancelled, agent.StatusAnswered, agent.StatusTurnEnded, agent.StatusTimedOut}

// New registers every metric, with the Go and process collectors.
func New() *Metrics {
	m := &Metrics{
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
	queue := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "threadline_queue_depth", Help: "Messages waiting for a busy chat.",
	}, func() float64 {
		if f := m.queue.Load(); f != nil {
			return float64((*f)())
		}
		return 0
	})
	m.reg.MustRegister(m.runs, m.active, m.duration, m.events, m.commit, m.pending, m.interactions,
		m.chatCalls, m.chatLimited, queue,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, k := range InteractionKinds {
		m.pending.WithLabelValues(string(k))
		for _, s := range InteractionStatuses {
			m.interactions.WithLabelValues(string(k), s)
		}
	}
	return m
}

// Known exports zero values for these agents (runs by status, duration,
// active runs) and for these chat platform API methods (platform ->
// method labels), so that their series exist before first use.
func (m *Metrics) Known(agents []string, calls map[string][]string) {
	for _, a := range agents {
		m.active.WithLabelValues(a)
		for _, s := range RunStatuses {
			m.runs.WithLabelValues(a, string(s))
			m.duration.WithLabelValues(a, string(s))
		}
	}
	for platform, methods := range calls {
		for _, method := range methods {
			m.chatCalls.WithLabelValues(platform, method)
			m.chatLimited.WithLabelValues(platform, method)
		}
	}
}

// RunStarted implements prompt.Observer.
func (m *Metrics) RunStarted(agent string) { m.active.WithLabelValues(agent).Inc() }

// RunEnded implements prompt.Observer.
func (m *Metrics) RunEnded(agent, status string, took time.Duration) {
	m.active.WithLabelValues(agent).Dec()
	m.runs.WithLabelValues(agent, status).Inc()
	m.duration.WithLabelValues(agent, status).Observe(took.Seconds())
}

// InteractionOpened implements prompt.Observer.
func (m *Metrics) InteractionOpened(kind string) { m.pending.WithLabelValues(kind).Inc() }

// InteractionClosed implements prompt.Observer.
func (m *Metrics) InteractionClosed(kind, status string) {
	m.pending.WithLabelValues(kind).Dec()
	m.interactions.WithLabelValues(kind, status).Inc()
}

// Persisted is the run hub's commit hook (runhub.Options.Persisted).
func (m *Metrics) Persisted(n int, took time.Duration) {
	m.events.Add(float64(n))
	m.commit.Observe(took.Seconds())
}

// ChatAPICall counts a platform API call; limited marks a 429 answer.
func (m *Metrics) ChatAPICall(platform, method string, limited bool) {
	m.chatCalls.WithLabelValues(platform, method).Inc()
	if limited {
		m.chatLimited.WithLabelValues(platform, method).Inc()
	}
}

// SetQueue makes depth the source of the busy-chat queue depth (0 until set).
func (m *Metrics) SetQueue(depth func() int) { m.queue.Store(&depth) }

// Transport counts the chat platform API calls made through base (nil:
// http.DefaultTransport), and the 429s; method names a call by its URL path
// for the label, without ids.
func (m *Metrics) Transport(platform string, method func(path string) string, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		res, err := base.RoundTrip(r)
		m.ChatAPICall(platform, method(r.URL.Path), err == nil && res.StatusCode == http.StatusTooManyRequests)
		return res, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Handler serves the metrics in the Prometheus text format (/metrics).
func (m *Metrics) Handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }
