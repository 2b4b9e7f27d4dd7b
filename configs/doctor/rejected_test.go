package doctor

import (
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/slack-go/slack"
)

// TestSlackRejected: Slack's own refusals are rejections; failures to
// reach it, 5xx and 429 are not (serve retries those at start).
func TestSlackRejected(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("auth.test: %w", slack.SlackErrorResponse{Err: "invalid_auth"}), true},
		{slack.StatusCodeError{Code: 401, Status: "401 Unauthorized"}, true},
		{slack.StatusCodeError{Code: 403, Status: "403 Forbidden"}, true},
		{slack.StatusCodeError{Code: 503, Status: "503 Service Unavailable"}, false},
		{&slack.RateLimitedError{}, false},
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, false},
	} {
		if got, _ := SlackRejected(tc.err); got != tc.want {
			t.Errorf("SlackRejected(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
