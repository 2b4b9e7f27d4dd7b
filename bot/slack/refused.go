// refused.go: telling Slack refusing a token from Slack being unreachable or
// busy, so that a wrong token ends serve while an outage is retried.

package slack

import (
	"errors"
	"net/http"

	"github.com/slack-go/slack"
)

// The tokens Slack refused: Run returns these (wrapped with the Slack call and
// its error) instead of retrying.
var (
	// ErrAppTokenRefused: apps.connections.open refused slack.app_token.
	ErrAppTokenRefused = errors.New("the app token (slack.app_token) was refused")
	// ErrBotTokenRefused: auth.test refused slack.bot_token.
	ErrBotTokenRefused = errors.New("the bot token (slack.bot_token) was refused")
)

// transientErrors are Slack errors ({"ok":false,"error":...}) that mean
// "try again later", not "this token is wrong".
var transientErrors = map[string]bool{
	"ratelimited": true, "internal_error": true, "fatal_error": true,
	"service_unavailable": true, "request_timeout": true,
}

// Refused reports whether err is Slack's answer refusing the call (an error
// such as invalid_auth, token_revoked or not_allowed_token_type, or HTTP
// 401/403) rather than a failure to reach it, a 5xx or a rate limit, and
// the reason to show.
func Refused(err error) (bool, string) {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return !transientErrors[se.Err], se.Err
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && (sc.Code == http.StatusUnauthorized || sc.Code == http.StatusForbidden) {
		return true, sc.Status
	}
	return false, ""
}
