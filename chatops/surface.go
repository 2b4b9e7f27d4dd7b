// surface.go: what a front-end offers chatops to show things in a thread, and
// the errors it reports.

package chatops

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Surface shows messages in a platform's threads. Implementations translate a
// View into the platform's format. They must be safe for concurrent use.
type Surface interface {
	// Post posts v in the thread (a top-level message when p.Thread is empty)
	// and returns the new message's id.
	Post(ctx context.Context, p Place, v View) (string, error)
	// Update replaces the content of message id with v.
	Update(ctx context.Context, p Place, id string, v View) error
	// Upload posts content as a file named filename in the thread.
	Upload(ctx context.Context, p Place, filename, content string) (string, error)
	// React adds the reaction name ("hourglass_flowing_sand") to message id.
	React(ctx context.Context, p Place, id, name string) error
	// Ephemeral shows text to u alone (a plain post where the platform cannot).
	Ephemeral(ctx context.Context, p Place, u User, text string) error
	// Mention renders a platform-qualified user id for display.
	Mention(qualified string) string
}

// Streamer is a Surface that can stream a message natively (Slack
// chat.startStream / appendStream / stopStream). Optional.
type Streamer interface {
	// StartStream starts a streamed reply in the thread with v's body.
	StartStream(ctx context.Context, p Place, v View) (string, error)
	// AppendStream appends Markdown to the streamed message.
	AppendStream(ctx context.Context, p Place, id, markdown string) error
	// StopStream appends the rest of the Markdown and ends the stream with v's
	// status, steps, footer and buttons.
	StopStream(ctx context.Context, p Place, id, rest string, v View) error
}

var (
	// ErrRateLimited is wrapped by errors that ask the caller to slow down.
	ErrRateLimited = errors.New("chatops: rate limited")
	// ErrStreamingUnavailable is returned by a Streamer that cannot stream here
	// (not allowed in the workspace, unsupported surface): the caller posts
	// and updates instead.
	ErrStreamingUnavailable = errors.New("chatops: native streaming unavailable")
	// ErrNotStreaming is returned by AppendStream and StopStream when the
	// message no longer streams (Slack message_not_in_streaming_state): the
	// caller updates it instead.
	ErrNotStreaming = errors.New("chatops: message is not streaming")
	// ErrMessageGone is returned by Update when the message no longer exists
	// (deleted in the client): the caller posts a new one.
	ErrMessageGone = errors.New("chatops: message is gone")
	// ErrForbidden is returned when a user may not do what they asked.
	ErrForbidden = errors.New("chatops: not allowed")
)

// RateLimitError is a platform's "slow down" with the wait it asked for.
type RateLimitError struct {
	RetryAfter time.Duration
	Method     string
}

func (e *RateLimitError) Error() string {
	return fmt.Sprintf("%s rate limited: retry after %s", e.Method, e.RetryAfter)
}

// Is makes errors.Is(err, ErrRateLimited) true.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }
