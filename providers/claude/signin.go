// Sign-in failures: Claude Code's own "Not logged in" turned into a hint that
// says how to sign the agent in.

package claude

import "strings"

// NotSignedInHint is the run.failed text when Claude Code is not signed in
// (it answers "Not logged in · Please run /login"): the fix, for an operator.
const NotSignedInHint = "Claude Code is not signed in. Export ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN, or " +
	"CLAUDE_CODE_OAUTH_TOKEN from `claude setup-token`) in the bot's environment, set it in agents.claude.env, " +
	"or run `claude /login` as the user the agent runs as (host.user when isolation is on); " +
	"`threadline doctor` shows the sign-in state."

// signInHint returns the hint when a failure text of Claude Code says the
// CLI is not signed in (2.1.328: the result "Not logged in · Please run
// /login", after an assistant message with error "authentication_failed"),
// else text unchanged. The CLI's own words are kept after the hint.
func signInHint(text string) string {
	if t := strings.TrimSpace(text); strings.HasPrefix(t, "Not logged in") {
		return NotSignedInHint + " (claude: " + t + ")"
	}
	return text
}
