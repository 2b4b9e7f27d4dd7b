// escape.go: agent text made inert for Slack: &, < and > are escaped as
// Slack's formatting rules ask, so that <!channel>, <!here>, <!everyone>,
// <!subteam^…>, <@U…>, <#C…> and <url|label> in an answer show as text
// instead of pinging people or disguising a link; the bot's own mentions
// (Mention) are restored after.

package slack

import (
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
	"sync/atomic"
)

// Markers of the bot's own mentions: private-use runes around a per-process
// nonce, which agent text cannot guess.
const (
	mentionOpen  = "\uE000"
	mentionClose = "\uE001"
)

var (
	mentionNonce = func() string {
		var b [8]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	mentionRestore = regexp.MustCompile(mentionOpen + mentionNonce + `@([A-Z0-9]+)` + mentionClose)
	slackID        = regexp.MustCompile(`^[A-Z0-9]+$`)
	mrkdwnEscaper  = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	// allowMentions is slack.allow_mentions: the operator lets agent text
	// mention people and channels. It is set by New, for the process (one
	// Slack app per process).
	allowMentions atomic.Bool
)

// escapeText prepares text for any Slack text field (mrkdwn, markdown
// blocks, markdown_text, the fallback text): &, < and > are escaped, except
// the > marks that open a line's quote, and the bot's own mention markers
// become mentions. With slack.allow_mentions the text goes as it is.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "&<>"+mentionOpen) {
		return s
	}
	if allowMentions.Load() {
		return restoreMentions(s)
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for ln := range strings.Lines(s) {
		i := 0
		for i < len(ln) && (ln[i] == ' ' || ln[i] == '\t') {
			i++
		}
		for i < len(ln) && ln[i] == '>' {
			i++ // a quote: "> text"
		}
		b.WriteString(ln[:i])
		_, _ = mrkdwnEscaper.WriteString(&b, ln[i:])
	}
	return restoreMentions(b.String())
}

// escapeLabel prepares the text of a link (<url|text>): &, < and > are
// always escaped, whatever slack.allow_mentions says and wherever they
// stand, since a > in the label would end the link and what follows (a
// title from a person or an agent) would be read as markup of its own,
// another link for instance.
func escapeLabel(s string) string { return mrkdwnEscaper.Replace(s) }

func restoreMentions(s string) string {
	if !strings.Contains(s, mentionOpen) {
		return s
	}
	return mentionRestore.ReplaceAllString(s, "<@$1>")
}
