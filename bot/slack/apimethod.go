// Slack's Web API calls as metric labels.

package slack

import "strings"

// APIMethod names a Web API call for a metric label: its method
// ("/api/chat.update" is "chat.update").
func APIMethod(path string) string {
	if i := strings.LastIndex(path, "/"); i >= 0 {
		return path[i+1:]
	}
	return path
}

// KnownCalls are the calls whose metrics exist from the start, as URL
// paths: the connection check, posting and editing.
var KnownCalls = []string{"/api/auth.test", "/api/chat.postMessage", "/api/chat.update"}
