// The chat platforms' API method labels of the metrics, and the admin
// routes (/healthz, /metrics) of serve.

package main

import (
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/health"
	"github.com/threadline-bot/threadline/agentcore/metrics"
	"github.com/threadline-bot/threadline/configs"
)

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

// knownCalls are the API calls of each platform whose metrics exist from
// the start, as URL paths: the connection check, posting and editing.
var knownCalls = map[string][]string{
	"slack":  {"/api/auth.test", "/api/chat.postMessage", "/api/chat.update"},
	"matrix": {"/_matrix/client/v3/account/whoami", "/_matrix/client/v3/sync", "/_matrix/client/v3/rooms/!r/send/m.room.message/t"},
}

// knownMethods are the method labels of knownCalls for the platforms in use.
func knownMethods(platforms ...string) map[string][]string {
	out := map[string][]string{}
	for _, p := range platforms {
		for _, path := range knownCalls[p] {
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
