// The chat platforms' API method labels of the metrics, and the admin
// routes (/healthz, /metrics) of serve.

package main

import (
	"net/http"

	"github.com/threadline-bot/threadline/agentcore/health"
	"github.com/threadline-bot/threadline/agentcore/metrics"
	"github.com/threadline-bot/threadline/bot/matrix"
	slackbot "github.com/threadline-bot/threadline/bot/slack"
	"github.com/threadline-bot/threadline/configs"
)

// apiMethods are the chat platforms' metric labels of their API calls
// (bot/slack, bot/matrix), and the calls whose metrics exist from the start.
var apiMethods = map[string]struct {
	label func(path string) string
	known []string
}{
	"slack":  {slackbot.APIMethod, slackbot.KnownCalls},
	"matrix": {matrix.APIMethod, matrix.KnownCalls},
}

// apiMethod names platform's API call at path for a metric label.
func apiMethod(platform, path string) string { return apiMethods[platform].label(path) }

// knownMethods are the method labels of the known calls of the platforms in use.
func knownMethods(platforms ...string) map[string][]string {
	out := map[string][]string{}
	for _, p := range platforms {
		for _, path := range apiMethods[p].known {
			out[p] = append(out[p], apiMethod(p, path))
		}
	}
	return out
}

// platformTransport counts platform's API calls made through base.
func platformTransport(m *metrics.Metrics, platform string, base http.RoundTripper) http.RoundTripper {
	return m.Transport(platform, func(path string) string { return apiMethod(platform, path) }, base)
}

// adminHandler serves /healthz and /metrics.
func adminHandler(m *metrics.Metrics, checks []health.Check) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.Handle("GET /healthz", health.Handler(checks))
	return mux
}

// platformsOf lists the chat platforms cfg configures.
func platformsOf(cfg *configs.Config) []string {
	var out []string
	if cfg.Slack != nil {
		out = append(out, "slack")
	}
	if cfg.Matrix != nil {
		out = append(out, "matrix")
	}
	return out
}
