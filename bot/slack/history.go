// history.go: a thread's messages for the agent's context
// (chatops.ThreadReader): conversations.replies, page by page, with the
// authors' display names from users.info (cached).

package slack

import (
	"context"
	"errors"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// Bounds of one thread read.
const (
	// historyPage is conversations.replies' limit per call (Slack
	// recommends at most 200).
	historyPage = 200
	// historyPages bounds the calls of one read: a thread of more than
	// historyPage*historyPages messages is read from its start that far.
	historyPages = 25
	// historyRetryWait is the longest Retry-After a read waits out once.
	historyRetryWait = 3 * time.Second
	// nameTTL is how long a user's display name is kept; namesMax how many.
	nameTTL  = time.Hour
	namesMax = 5000
	// mentionsMax bounds the distinct <@U…> mentions named in one read.
	mentionsMax = 20
)

var _ chatops.ThreadReader = (*surface)(nil)

// names caches display names from users.info.
type names struct {
	mu sync.Mutex
	m  map[string]nameEntry
}

type nameEntry struct {
	name string
	at   time.Time
}

// ThreadHistory returns the thread's messages (chatops.ThreadReader), oldest
// first: those before q.Before (a ts) and after q.Since, read with the bot's
// token. A top-level message that starts its thread has nothing before it.
func (s *surface) ThreadHistory(ctx context.Context, p chatops.Place, q chatops.HistoryQuery) ([]chatops.ThreadMessage, error) {
	if p.Thread == "" || q.Before == p.Thread {
		return nil, nil
	}
	params := &slack.GetConversationRepliesParameters{ChannelID: p.Channel, Timestamp: p.Thread, Limit: historyPage, Latest: q.Before}
	if !q.Since.IsZero() {
		params.Oldest = tsOf(q.Since)
	}
	var raw []slack.Message
	for page := 0; ; page++ {
		if page == historyPages {
			s.log().WarnContext(ctx, "thread longer than the context read; the rest is left out", logkey.Channel, p.Channel, logkey.ThreadID, p.Thread, logkey.Count, len(raw))
			break
		}
		msgs, more, next, err := s.replies(ctx, params)
		if err != nil {
			return nil, err
		}
		raw = append(raw, msgs...)
		if !more || next == "" {
			break
		}
		params.Cursor = next
	}
	var self, selfBot string
	if s.self != nil {
		self, selfBot = s.self()
	}
	out := make([]chatops.ThreadMessage, 0, len(raw))
	for _, m := range raw {
		switch m.SubType {
		case "", "bot_message", "file_share", "thread_broadcast", "me_message":
		default:
			continue // joins, topic changes, deletions
		}
		tm := chatops.ThreadMessage{ID: m.Timestamp, AuthorID: m.User, Time: tsTime(m.Timestamp), Own: (self != "" && m.User == self) || (selfBot != "" && m.BotID == selfBot)}
		switch {
		case tm.Own:
		case m.BotID != "" && m.BotProfile != nil && m.BotProfile.Name != "":
			tm.Author = m.BotProfile.Name
		case m.BotID != "" && m.Username != "":
			tm.Author = m.Username
		case m.User != "":
			tm.Author = s.displayName(ctx, m.User)
		}
		if tm.AuthorID == "" {
			tm.AuthorID = m.BotID
		}
		tm.Text = s.readable(ctx, m.Text)
		for _, f := range m.Files {
			tm.Files = append(tm.Files, firstOf(f.Name, f.Title, f.ID))
		}
		out = append(out, tm)
	}
	return out, nil
}

// replies is one conversations.replies call; a short Retry-After is waited
// out once.
func (s *surface) replies(ctx context.Context, params *slack.GetConversationRepliesParameters) ([]slack.Message, bool, string, error) {
	msgs, more, next, err := s.api.GetConversationRepliesContext(ctx, params)
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) && rl.RetryAfter <= historyRetryWait {
		select {
		case <-time.After(rl.RetryAfter):
		case <-ctx.Done():
			return nil, false, "", ctx.Err()
		}
		msgs, more, next, err = s.api.GetConversationRepliesContext(ctx, params)
	}
	return msgs, more, next, translate("conversations.replies", err)
}

// displayName is a user's display name (else real name, else handle) from
// users.info, cached; the id when Slack does not say.
func (s *surface) displayName(ctx context.Context, id string) string {
	s.names.mu.Lock()
	e, ok := s.names.m[id]
	s.names.mu.Unlock()
	if ok && time.Since(e.at) < nameTTL {
		return e.name
	}
	u, err := s.api.GetUserInfoContext(ctx, id)
	if err != nil {
		s.log().InfoContext(ctx, "users.info for a thread's author", "user", id, "err", err)
		return ""
	}
	name := firstOf(u.Profile.DisplayName, u.Profile.RealName, u.RealName, u.Name)
	s.names.mu.Lock()
	defer s.names.mu.Unlock()
	if s.names.m == nil || len(s.names.m) >= namesMax {
		s.names.m = map[string]nameEntry{}
	}
	s.names.m[id] = nameEntry{name: name, at: time.Now()}
	return name
}

var userMention = regexp.MustCompile(`<@([UW][A-Z0-9]+)(?:\|[^>]*)?>`)

// readable turns a message's Slack markup into what a person reads: user
// mentions as @name (the first mentionsMax distinct users looked up) and
// Slack's escapes (&amp; &lt; &gt;) undone.
func (s *surface) readable(ctx context.Context, text string) string {
	looked := 0
	text = userMention.ReplaceAllStringFunc(text, func(m string) string {
		id := userMention.FindStringSubmatch(m)[1]
		if looked >= mentionsMax {
			return "@" + id
		}
		looked++
		if n := s.displayName(ctx, id); n != "" {
			return "@" + n
		}
		return "@" + id
	})
	return html.UnescapeString(text)
}

// tsOf is the Slack ts of a time (seconds and microseconds).
func tsOf(t time.Time) string {
	us := t.UnixMicro()
	return strconv.FormatInt(us/1e6, 10) + "." + fmt.Sprintf("%06d", us%1e6)
}

// firstOf is the first of v that is not blank.
func firstOf(v ...string) string {
	for _, s := range v {
		if strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}
