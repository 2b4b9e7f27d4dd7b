// surface.go: what a front-end offers chatops to show things in a thread, and
// the errors it reports.

package chatops

import (
	"context"
	"errors"

	"github.com/threadline-bot/threadline/chatops/outbox"
)

// Surface shows messages in a platform's threads: the outbox's Sender (post,
// update, upload a View) and what chatops itself does in a thread.
// Implementations must be safe for concurrent use.
type Surface interface {
	outbox.Sender
	// React adds the reaction name ("hourglass_flowing_sand") to message id.
	React(ctx context.Context, p Place, id, name string) error
	// Ephemeral shows text to u alone (a plain post where the platform cannot).
	Ephemeral(ctx context.Context, p Place, u User, text string) error
	// Mention renders a platform-qualified user id for display.
	Mention(qualified string) string
}

// Streamer is a Surface that can stream a message natively (Slack
// chat.startStream / appendStream / stopStream). Optional.
type Streamer = outbox.Streamer

// RateLimitError is a platform's "slow down" with the wait it asked for.
type RateLimitError = outbox.RateLimitError

// The errors a Surface reports (defined by the outbox, which acts on them).
var (
	// ErrRateLimited is wrapped by errors that ask the caller to slow down.
	ErrRateLimited = outbox.ErrRateLimited
	// ErrStreamingUnavailable is returned by a Streamer that cannot stream
	// here: the caller posts and updates instead.
	ErrStreamingUnavailable = outbox.ErrStreamingUnavailable
	// ErrNotStreaming is returned by AppendStream and StopStream when the
	// message no longer streams: the caller updates it instead.
	ErrNotStreaming = outbox.ErrNotStreaming
	// ErrMessageGone is returned by Update when the message no longer exists:
	// the caller posts a new one.
	ErrMessageGone = outbox.ErrMessageGone
)

// ErrForbidden is returned when a user may not do what they asked.
var ErrForbidden = errors.New("chatops: not allowed")
