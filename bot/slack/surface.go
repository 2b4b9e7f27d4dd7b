// surface.go: chatops views as Slack messages: Block Kit for posts and edits,
// chat.startStream/appendStream/stopStream for native streaming, files for
// very long answers, and Slack errors translated into chatops errors.

package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/chatops"
)

// surface implements chatops.Surface and chatops.Streamer over the Web API.
type surface struct {
	api    *slack.Client
	stream bool

	// requester remembers who last asked in a thread: chat.startStream in
	// channels needs a recipient user.
	mu        sync.Mutex
	requester map[chatops.Place]string
}

var (
	_ chatops.Surface  = (*surface)(nil)
	_ chatops.Streamer = (*surface)(nil)
)

func (s *surface) asked(p chatops.Place, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requester) > 10000 {
		clear(s.requester)
	}
	s.requester[p] = user
}

// Slack limits the blocks are kept under.
const (
	maxSectionText  = 3000
	maxMarkdownText = 12000
	maxButtonValue  = 2000
	maxButtonText   = 75
	maxFallbackText = 3000
)

// blocks renders a view as Block Kit. The text fields are escaped for Slack
// (see escapeText).
func blocks(v chatops.View) []slack.Block {
	var out []slack.Block
	if v.Status != "" {
		out = append(out, slack.NewContextBlock("tl_status", slack.NewTextBlockObject(slack.MarkdownType, clip(escapeText(v.Status), maxSectionText), false, false)))
	}
	if v.Body != "" {
		out = append(out, slack.NewMarkdownBlock("tl_body", clip(escapeText(v.Body), maxMarkdownText)))
	}
	if len(v.Steps) > 0 {
		out = append(out, slack.NewContextBlock("tl_steps", slack.NewTextBlockObject(slack.MarkdownType, clip(escapeText(strings.Join(v.Steps, "\n")), maxSectionText), false, false)))
	}
	if v.Footer != "" {
		out = append(out, slack.NewContextBlock("tl_footer", slack.NewTextBlockObject(slack.MarkdownType, clip(escapeText(v.Footer), maxSectionText), false, false)))
	}
	if len(v.Buttons) > 0 {
		var els []slack.BlockElement
		for i, b := range v.Buttons {
			if i == 25 || len(b.Value) > maxButtonValue {
				continue
			}
			btn := slack.NewButtonBlockElement(b.ID, b.Value, slack.NewTextBlockObject(slack.PlainTextType, clip(b.Label, maxButtonText), false, false))
			switch b.Style {
			case chatops.StylePrimary:
				btn = btn.WithStyle(slack.StylePrimary)
			case chatops.StyleDanger:
				btn = btn.WithStyle(slack.StyleDanger)
			}
			els = append(els, btn)
		}
		out = append(out, slack.NewActionBlock("tl_actions", els...))
	}
	return out
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func (s *surface) msgOptions(v chatops.View) []slack.MsgOption {
	opts := []slack.MsgOption{slack.MsgOptionText(clip(escapeText(v.Text()), maxFallbackText), false)}
	if b := blocks(v); len(b) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(b...))
	}
	return opts
}

func (s *surface) Post(ctx context.Context, p chatops.Place, v chatops.View) (string, error) {
	opts := s.msgOptions(v)
	if p.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(p.Thread))
	}
	if v.Key != "" {
		opts = append(opts, slack.MsgOptionMetadata(slack.SlackMetadata{
			EventType: postKeyEvent, EventPayload: map[string]any{"key": v.Key},
		}))
	}
	_, ts, err := s.api.PostMessageContext(ctx, p.Channel, opts...)
	if err != nil {
		if v.Key != "" && p.Thread != "" && transportError(err) {
			// The answer was lost, not necessarily the post: look for it.
			if found := s.findPosted(ctx, p, v.Key); found != "" {
				return found, nil
			}
		}
		return "", translate("chat.postMessage", err)
	}
	return ts, nil
}

// postKeyEvent is the metadata event type that carries a post's key.
const postKeyEvent = "threadline_post"

// findPosted returns the ts of the bot's message in the thread that carries key,
// or "" when there is none (or the lookup fails).
func (s *surface) findPosted(ctx context.Context, p chatops.Place, key string) string {
	msgs, _, _, err := s.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
		ChannelID: p.Channel, Timestamp: p.Thread, IncludeAllMetadata: true, Limit: 200,
	})
	if err != nil {
		return ""
	}
	for _, m := range msgs {
		if m.Metadata.EventType == postKeyEvent && m.Metadata.EventPayload["key"] == key {
			return m.Timestamp
		}
	}
	return ""
}

// transportError reports a failure of the connection rather than an answer of
// Slack: the call may or may not have taken effect.
func transportError(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

func (s *surface) Update(ctx context.Context, p chatops.Place, id string, v chatops.View) error {
	_, _, _, err := s.api.UpdateMessageContext(ctx, p.Channel, id, s.msgOptions(v)...)
	return translate("chat.update", err)
}

func (s *surface) Upload(ctx context.Context, p chatops.Place, filename, content string) (string, error) {
	f, err := s.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: filename, Title: filename, Content: content, FileSize: len(content),
		Channel: p.Channel, ThreadTimestamp: p.Thread,
	})
	if err != nil {
		return "", translate("files.upload", err)
	}
	return f.ID, nil
}

func (s *surface) React(ctx context.Context, p chatops.Place, id, name string) error {
	err := s.api.AddReactionContext(ctx, name, slack.ItemRef{Channel: p.Channel, Timestamp: id})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && se.Err == "already_reacted" {
		return nil
	}
	return translate("reactions.add", err)
}

func (s *surface) Ephemeral(ctx context.Context, p chatops.Place, u chatops.User, text string) error {
	opts := []slack.MsgOption{slack.MsgOptionText(clip(escapeText(text), maxFallbackText), false)}
	if p.Thread != "" {
		opts = append(opts, slack.MsgOptionTS(p.Thread))
	}
	_, err := s.api.PostEphemeralContext(ctx, p.Channel, u.ID, opts...)
	return translate("chat.postEphemeral", err)
}

// Mention renders "slack:U123" as the bot's own mention of U123: a marker
// that escapeText turns into "<@U123>" after escaping the text around it, so
// that the bot's mentions work while the agent's show as text.
func (s *surface) Mention(qualified string) string {
	u := chatops.ParseUser(qualified)
	if u.Platform != Platform || !slackID.MatchString(u.ID) {
		return qualified
	}
	return mentionOpen + mentionNonce + "@" + u.ID + mentionClose
}

// recipient returns who asked last in the thread: chat.startStream in a
// channel needs the recipient.
func (s *surface) recipient(p chatops.Place) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.requester[p]
	return u, ok
}

func (s *surface) StartStream(ctx context.Context, p chatops.Place, v chatops.View) (string, error) {
	if !s.stream || p.Thread == "" {
		return "", fmt.Errorf("%w: streaming is off", chatops.ErrStreamingUnavailable)
	}
	opts := []slack.MsgOption{slack.MsgOptionTS(p.Thread)}
	if !v.Working && v.Body != "" {
		opts = append(opts, slack.MsgOptionMarkdownText(clip(escapeText(v.Body), maxMarkdownText)))
	}
	if !strings.HasPrefix(p.Channel, "D") {
		u, ok := s.recipient(p)
		if !ok {
			return "", fmt.Errorf("%w: no recipient known for %s", chatops.ErrStreamingUnavailable, p)
		}
		opts = append(opts, slack.MsgOptionRecipientUserID(u), slack.MsgOptionRecipientTeamID(p.Workspace))
	}
	_, ts, err := s.api.StartStreamContext(ctx, p.Channel, opts...)
	if err != nil {
		return "", translate("chat.startStream", err)
	}
	return ts, nil
}

func (s *surface) AppendStream(ctx context.Context, p chatops.Place, id, markdown string) error {
	for _, chunk := range chunks(markdown, maxMarkdownText) {
		if _, _, err := s.api.AppendStreamContext(ctx, p.Channel, id, slack.MsgOptionMarkdownText(chunk)); err != nil {
			return translate("chat.appendStream", err)
		}
	}
	return nil
}

func (s *surface) StopStream(ctx context.Context, p chatops.Place, id, rest string, v chatops.View) error {
	parts := chunks(rest, maxMarkdownText)
	for _, chunk := range parts[:max(len(parts)-1, 0)] {
		if _, _, err := s.api.AppendStreamContext(ctx, p.Channel, id, slack.MsgOptionMarkdownText(chunk)); err != nil {
			return translate("chat.appendStream", err)
		}
	}
	var opts []slack.MsgOption
	if len(parts) > 0 && parts[len(parts)-1] != "" {
		opts = append(opts, slack.MsgOptionMarkdownText(parts[len(parts)-1]))
	}
	// The streamed text is the body; the stop adds the rest of the view.
	tail := v
	tail.Body = ""
	if b := blocks(tail); len(b) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(b...))
	}
	_, _, err := s.api.StopStreamContext(ctx, p.Channel, id, opts...)
	return translate("chat.stopStream", err)
}

// chunks escapes streamed markdown for Slack (escapeText) and cuts it into
// pieces of at most n runes.
func chunks(s string, n int) []string {
	if s == "" {
		return nil
	}
	var out []string
	r := []rune(escapeText(s))
	for len(r) > n {
		out = append(out, string(r[:n]))
		r = r[n:]
	}
	return append(out, string(r))
}

// streamUnavailable are the errors of chat.startStream that mean this
// workspace or surface cannot stream.
var streamUnavailable = map[string]bool{
	"not_allowed": true, "not_allowed_token_type": true, "unknown_method": true, "feature_not_enabled": true,
	"method_deprecated": true, "missing_recipient_user_id": true, "missing_recipient_team_id": true,
	"missing_scope": true, "invalid_arguments": true, "team_not_allowed": true,
}

// translate maps slack-go errors to chatops errors.
func translate(method string, err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &chatops.RateLimitError{RetryAfter: rl.RetryAfter, Method: method}
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code == http.StatusTooManyRequests {
		return &chatops.RateLimitError{Method: method}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch {
		case se.Err == "message_not_found" && (method == "chat.update" || method == "chat.appendStream" || method == "chat.stopStream"):
			return fmt.Errorf("%s: %w: %w", method, chatops.ErrMessageGone, err)
		case se.Err == "message_not_in_streaming_state":
			return fmt.Errorf("%s: %w: %w", method, chatops.ErrNotStreaming, err)
		case method == "chat.startStream" && streamUnavailable[se.Err]:
			return fmt.Errorf("%s: %w: %w", method, chatops.ErrStreamingUnavailable, err)
		case se.Err == "ratelimited":
			return &chatops.RateLimitError{Method: method}
		}
	}
	return fmt.Errorf("%s: %w", method, err)
}
