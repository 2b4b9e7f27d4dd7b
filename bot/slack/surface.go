// surface.go: chatops views as Slack messages: Block Kit for posts and edits,
// chat.startStream/appendStream/stopStream for native streaming, files for
// very long answers, and Slack errors translated into chatops errors.

package slack

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// surface implements chatops.Surface and chatops.Streamer over the Web API.
type surface struct {
	api *slack.Client
	// token is the bot token, sent with a file's download (files.go).
	token  string
	stream bool

	// requester remembers who last asked in a thread: chat.startStream in
	// channels needs a recipient user.
	mu        sync.Mutex
	requester map[chatops.Place]string
	// home, when set, follows the runs the messages show (App Home).
	home *home
	// sessions, when set, keeps each thread's agent session (sessions.go).
	sessions *sessions
	// sent maps the bot's messages (channel + "/" + ts) to their threads,
	// so that a ⏹ reaction on one stops its thread's run.
	sent map[string]chatops.Place

	// names caches display names (history.go); logger logs what reading a
	// thread skipped; self returns the bot's user and bot ids (auth.test).
	names  names
	logger *slog.Logger
	self   func() (user, bot string)
}

func (s *surface) log() *slog.Logger {
	if s.logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.logger
}

// posted remembers the thread of a message the bot posted.
func (s *surface) posted(p chatops.Place, ts string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sent == nil || len(s.sent) > 10000 {
		s.sent = map[string]chatops.Place{}
	}
	s.sent[p.Channel+"/"+ts] = p
}

// threadOf returns the thread of message ts in channel: a message the bot
// posted, or the root of a thread someone asked in.
func (s *surface) threadOf(team, channel, ts string) (chatops.Place, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.sent[channel+"/"+ts]; ok {
		return p, true
	}
	p := chatops.Place{Platform: Platform, Workspace: team, Channel: channel, Thread: ts}
	_, ok := s.requester[p]
	return p, ok
}

var (
	_ chatops.Surface     = (*surface)(nil)
	_ chatops.Streamer    = (*surface)(nil)
	_ outbox.StatusSetter = (*surface)(nil)
	_ outbox.Deleter      = (*surface)(nil)
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
	s.home.observe(p, v)
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
	s.posted(p, ts)
	s.observeSession(p, ts, v)
	return ts, nil
}

// observeSession follows what the bot's message id shows for the thread's
// agent session.
func (s *surface) observeSession(p chatops.Place, id string, v chatops.View) {
	if s.sessions != nil && s.sessions.view(p, id, v) {
		s.sessions.kick(p)
	}
}

// halted returns an error wrapping chatops.ErrNotStreaming when Slack halted
// the stream id (Slack's Stop on the agent session): nothing more is
// appended to it, the caller edits it instead.
func (s *surface) halted(method string, p chatops.Place, id string) error {
	if s.sessions != nil && s.sessions.isHalted(p.Channel, id) {
		return fmt.Errorf("%s: %w: halted by the agent session's Stop", method, chatops.ErrNotStreaming)
	}
	return nil
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
	s.home.observe(p, v)
	_, _, _, err := s.api.UpdateMessageContext(ctx, p.Channel, id, s.msgOptions(v)...)
	if err == nil {
		s.observeSession(p, id, v)
	}
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

// UploadFile posts f in the thread (chatops.FileUploader) under its title:
// Slack takes a file's type from its name, so a name without an extension
// gets its content type's ("chart" of image/png is posted as chart.png).
func (s *surface) UploadFile(ctx context.Context, p chatops.Place, f chatops.OutFile) (string, error) {
	name := f.Name
	if path.Ext(name) == "" && f.MIMEType != "" {
		if exts, _ := mime.ExtensionsByType(f.MIMEType); len(exts) > 0 {
			name += preferredExt(f.MIMEType, exts)
		}
	}
	up, err := s.api.UploadFileContext(ctx, slack.UploadFileParameters{
		Filename: name, Title: cmp.Or(f.Title, name), Reader: bytes.NewReader(f.Content), FileSize: len(f.Content),
		Channel: p.Channel, ThreadTimestamp: p.Thread,
	})
	if err != nil {
		return "", translate("files.upload", err)
	}
	return up.ID, nil
}

// preferredExt is the usual extension of a type among exts (mime's order
// is alphabetical: ".jpe" before ".jpg").
func preferredExt(mimeType string, exts []string) string {
	base, _, _ := strings.Cut(mimeType, ";")
	switch strings.TrimSpace(base) {
	case "image/jpeg":
		return ".jpg"
	case "text/plain":
		return ".txt"
	}
	return exts[0]
}

var _ chatops.FileUploader = (*surface)(nil)

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

func (s *surface) StartStream(ctx context.Context, p chatops.Place, cs []outbox.Chunk) (string, error) {
	if !s.stream || p.Thread == "" {
		return "", fmt.Errorf("%w: streaming is off", chatops.ErrStreamingUnavailable)
	}
	// Tool calls show as task cards between the paragraphs (timeline); a
	// plan's items are tasks under its plan_update title.
	opts := []slack.MsgOption{slack.MsgOptionTS(p.Thread), slack.MsgOptionTaskDisplayMode(slack.TaskDisplayModeTimeline)}
	if !strings.HasPrefix(p.Channel, "D") {
		u, ok := s.recipient(p)
		if !ok {
			return "", fmt.Errorf("%w: no recipient known for %s", chatops.ErrStreamingUnavailable, p)
		}
		opts = append(opts, slack.MsgOptionRecipientUserID(u), slack.MsgOptionRecipientTeamID(p.Workspace))
	}
	calls := streamChunks(cs)
	if len(calls) > 0 {
		opts = append(opts, slack.MsgOptionChunks(calls[0]...))
	}
	_, ts, err := s.api.StartStreamContext(ctx, p.Channel, opts...)
	if err != nil {
		return "", translate("chat.startStream", err)
	}
	s.posted(p, ts)
	for _, c := range calls[min(1, len(calls)):] {
		if _, _, err := s.api.AppendStreamContext(ctx, p.Channel, ts, slack.MsgOptionChunks(c...)); err != nil {
			return ts, translate("chat.appendStream", err)
		}
	}
	return ts, nil
}

func (s *surface) AppendStream(ctx context.Context, p chatops.Place, id string, cs []outbox.Chunk) error {
	if err := s.halted("chat.appendStream", p, id); err != nil {
		return err
	}
	for _, c := range streamChunks(cs) {
		if _, _, err := s.api.AppendStreamContext(ctx, p.Channel, id, slack.MsgOptionChunks(c...)); err != nil {
			return translate("chat.appendStream", err)
		}
	}
	return nil
}

func (s *surface) StopStream(ctx context.Context, p chatops.Place, id string, cs []outbox.Chunk, v chatops.View) error {
	s.home.observe(p, v)
	if err := s.halted("chat.stopStream", p, id); err != nil {
		return err
	}
	calls := streamChunks(cs)
	var last []slack.StreamChunk
	if len(calls) > 0 {
		last = calls[len(calls)-1]
		for _, c := range calls[:len(calls)-1] {
			if _, _, err := s.api.AppendStreamContext(ctx, p.Channel, id, slack.MsgOptionChunks(c...)); err != nil {
				return translate("chat.appendStream", err)
			}
		}
	}
	var opts []slack.MsgOption
	if len(last) > 0 {
		opts = append(opts, slack.MsgOptionChunks(last...))
	}
	// The body, its task cards and the plan were streamed; the stop adds the
	// status line, the footer and the buttons.
	tail := chatops.View{Status: v.Status, Footer: v.Footer, Buttons: v.Buttons}
	if b := blocks(tail); len(b) > 0 {
		opts = append(opts, slack.MsgOptionBlocks(b...))
	}
	_, _, err := s.api.StopStreamContext(ctx, p.Channel, id, opts...)
	if err == nil {
		s.observeSession(p, id, v)
	}
	return translate("chat.stopStream", err)
}

// Slack's limits on stream chunks.
const (
	maxTaskTitle     = 256
	maxTaskOutput    = 256
	maxChunksPerCall = 50
)

// streamChunks turns outbox chunks into Slack chunks, grouped by call: text
// escaped for Slack (escapeText) and cut into markdown_text chunks of at most
// 12,000 characters, each call carrying at most 12,000 characters of text and
// 50 chunks; a task update as a task_update chunk (title and output are plain
// text, clipped to 256 characters); a plan as a plan_update chunk (its title)
// and one task_update per item (ids "plan-<n>").
func streamChunks(cs []outbox.Chunk) [][]slack.StreamChunk {
	var (
		out  [][]slack.StreamChunk
		cur  []slack.StreamChunk
		text int
	)
	add := func(c slack.StreamChunk, n int) {
		if len(cur) == maxChunksPerCall || (n > 0 && text+n > maxMarkdownText) {
			out, cur, text = append(out, cur), nil, 0
		}
		cur = append(cur, c)
		text += n
	}
	for _, c := range cs {
		switch {
		case c.Task != nil:
			add(taskChunk(c.Task.ID, c.Task.Title, c.Task.Status, c.Task.Output), 0)
		case c.Plan != nil:
			add(slack.NewPlanUpdateChunk(clip(c.Plan.Title, maxTaskTitle)), 0)
			for i, it := range c.Plan.Items {
				add(taskChunk(fmt.Sprintf("plan-%d", i), it.Text, it.Status, ""), 0)
			}
		default:
			for _, piece := range chunks(c.Markdown, maxMarkdownText) {
				add(slack.NewMarkdownTextChunk(piece), len([]rune(piece)))
			}
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func taskChunk(id, title string, st render.StepStatus, output string) slack.TaskUpdateChunk {
	c := slack.NewTaskUpdateChunk(id, clip(plainText(title), maxTaskTitle))
	c.Status = slack.TaskCardStatus(st)
	if output != "" {
		c.Output = clip(plainText(output), maxTaskOutput)
	}
	return c
}

// plainText makes text safe for a plain-text field: control characters
// other than line breaks go.
func plainText(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, s)
}

// SetStatus shows that a turn runs in the thread (status, "is thinking…")
// or that it ended (""): where the workspace has agent sessions, as the
// thread's session status (processing, then active; tried on the
// workspace's first status, sessions.go), else as its assistant status
// (assistant.threads.setStatus, in channels and DMs).
//
// A session status Slack puts off (Tier 3, a 429: sessions.go tries again
// when Slack says) is shown meanwhile as the assistant status, whose budget
// is apart, so that the thread shows a sign at once: the thread's first
// reply or the turn's end clears it, and a failure of it is left to the
// session's retry.
func (s *surface) SetStatus(ctx context.Context, p chatops.Place, status string) error {
	if s.sessions != nil && s.sessions.mode(p.Workspace) != sessionsRefused {
		s.sessions.activity(p, status != "")
		limited := s.sessions.sync(ctx, p)
		if s.sessions.mode(p.Workspace) == sessionsOn {
			switch {
			case limited && status != "":
				s.sessions.standIn(p, true)
			case status != "" || !s.sessions.standIn(p, false):
				return nil
			}
			if err := s.assistantStatus(ctx, p, status); err != nil {
				s.log().DebugContext(ctx, "assistant status in place of the session's", logkey.Channel, p.Channel, logkey.Err, err)
			}
			return nil
		}
	}
	return s.assistantStatus(ctx, p, status)
}

// OwnStop reports whether Slack shows its own Stop button on the thread's
// streamed answer (the workspace has agent sessions): the outbox then posts
// no companion message for Threadline's.
func (s *surface) OwnStop(p chatops.Place) bool {
	return s.sessions != nil && s.sessions.mode(p.Workspace) == sessionsOn
}

// assistantStatus sets the thread's assistant status ("" clears it).
func (s *surface) assistantStatus(ctx context.Context, p chatops.Place, status string) error {
	err := s.api.SetAssistantThreadsStatusContext(ctx, slack.AssistantThreadsSetStatusParameters{
		ChannelID: p.Channel, ThreadTS: p.Thread, Status: clip(plainText(status), 100),
	})
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && statusUnavailable[se.Err] {
		return fmt.Errorf("assistant.threads.setStatus: %w: %w", outbox.ErrUnsupported, err)
	}
	return translate("assistant.threads.setStatus", err)
}

// statusUnavailable are the errors of assistant.threads.setStatus that mean
// the workspace or app cannot show a status.
var statusUnavailable = map[string]bool{
	"not_allowed": true, "not_allowed_token_type": true, "unknown_method": true, "feature_not_enabled": true,
	"missing_scope": true, "team_not_allowed": true, "method_deprecated": true,
}

// Delete deletes one of the bot's messages (chat.delete).
func (s *surface) Delete(ctx context.Context, p chatops.Place, id string) error {
	_, _, err := s.api.DeleteMessageContext(ctx, p.Channel, id)
	if err == nil && s.sessions != nil && s.sessions.gone(p, id) {
		s.sessions.kick(p)
	}
	return translate("chat.delete", err)
}

// streamUnavailable are the errors of chat.startStream that mean this
// workspace or surface cannot stream.
var streamUnavailable = map[string]bool{
	"not_allowed": true, "not_allowed_token_type": true, "unknown_method": true, "feature_not_enabled": true,
	"method_deprecated": true, "missing_recipient_user_id": true, "missing_recipient_team_id": true,
	"missing_scope": true, "invalid_arguments": true, "team_not_allowed": true,
}

// unavailableErrors are Slack's errors ({"ok":false,"error":...}) that mean
// "try again later": the call is retried like a 5xx.
var unavailableErrors = map[string]bool{
	"internal_error": true, "fatal_error": true, "service_unavailable": true, "request_timeout": true,
}

// translate maps slack-go errors to chatops errors: a 429 to a
// RateLimitError, a 5xx (or 408, or an error that says Slack failed for
// now) to an outbox.UnavailableError, which the outbox retries.
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
	if errors.As(err, &sc) && (sc.Code >= 500 || sc.Code == http.StatusRequestTimeout) {
		// slack-go keeps no header of a 5xx: a Retry-After is not known.
		return &outbox.UnavailableError{Method: method, Status: sc.Code, Err: err}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		switch {
		case unavailableErrors[se.Err]:
			return &outbox.UnavailableError{Method: method, Err: err}
		case se.Err == "message_not_found" && (method == "chat.update" || method == "chat.appendStream" || method == "chat.stopStream" || method == "chat.delete"):
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
