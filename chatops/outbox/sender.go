// sender.go: what the outbox needs of a chat platform (a Sender, optionally a
// Streamer, a Saver for what was sent), the thread a message goes to, and the
// errors a platform reports to ask for a retry, a pause or another way.

package outbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/chatops/render"
)

// Place is a thread on a chat platform: the unit a chat is bound to and the
// destination of a run's messages.
type Place struct {
	// Platform is "slack", "matrix" or "console".
	Platform string
	// Workspace is the Slack team id or the Matrix server; empty where the
	// platform has none.
	Workspace string
	// Channel is the Slack channel (or DM) id, the Matrix room id.
	Channel string
	// Thread is the thread root (Slack ts of the first message, Matrix event id).
	Thread string
}

// String renders the place for logs.
func (p Place) String() string {
	return p.Platform + ":" + p.Workspace + "/" + p.Channel + "/" + p.Thread
}

// Message is one platform message a run was rendered into, as it is persisted.
type Message struct {
	RunID agent.RunID
	// Slot names the message within the run: "answer/0", "answer/1",
	// "card/<interaction id>", "file".
	Slot   string
	ChatID agent.ChatID
	Place  Place
	// MessageID is the platform's id of the message (Slack ts); empty until posted.
	MessageID string
	// FirstSeq is the seq of the run's first event; LastSeq the newest event
	// the message shows.
	FirstSeq, LastSeq int64
	// Hash identifies the content last sent, so an identical re-render sends nothing.
	Hash string
	// Final is set once the message shows the run's end (or the card's answer).
	Final bool
}

// Sender posts and edits messages in a platform's threads. Implementations
// translate a View into the platform's format and must be safe for
// concurrent use.
type Sender interface {
	// Post posts v in the thread (a top-level message when p.Thread is empty)
	// and returns the new message's id.
	Post(ctx context.Context, p Place, v render.View) (string, error)
	// Update replaces the content of message id with v.
	Update(ctx context.Context, p Place, id string, v render.View) error
	// Upload posts content as a file named filename in the thread.
	Upload(ctx context.Context, p Place, filename, content string) (string, error)
}

// Streamer is a Sender that can stream a message natively (Slack
// chat.startStream / appendStream / stopStream). Optional.
type Streamer interface {
	// StartStream starts a streamed reply in the thread showing chunks
	// (possibly none: an empty stream the answer is appended to).
	StartStream(ctx context.Context, p Place, chunks []Chunk) (string, error)
	// AppendStream adds chunks to the streamed message, in order.
	AppendStream(ctx context.Context, p Place, id string, chunks []Chunk) error
	// StopStream adds the last chunks and ends the stream with v's status,
	// footer and buttons (v's body, tasks and plan were streamed).
	StopStream(ctx context.Context, p Place, id string, chunks []Chunk, v render.View) error
}

// StatusSetter is a Sender that shows what the agent is doing in a thread
// (Slack's assistant thread status). Optional: the outbox sets a run's
// status from its answer's View.Activity once the answer's first message is
// there, and clears it when the answer is final.
type StatusSetter interface {
	// SetStatus shows status in the thread; "" clears it. It returns an
	// error wrapping ErrUnsupported where the platform has no status.
	SetStatus(ctx context.Context, p Place, status string) error
}

// Deleter is a Sender that can delete its messages. Optional: with a
// Streamer, the outbox keeps a streamed answer's buttons (Stop) in a small
// companion message and deletes it when the stream ends.
type Deleter interface {
	Delete(ctx context.Context, p Place, id string) error
}

// OwnStopper is a Streamer whose platform shows its own Stop button on a
// thread's streamed answer (Slack's agent sessions). Optional: where
// OwnStop is true the outbox posts no companion message for the Stop
// button.
type OwnStopper interface {
	OwnStop(p Place) bool
}

// Saver persists what was sent, so that a restart edits the same messages and
// sends nothing twice.
type Saver interface {
	// SaveRenderedMessage inserts or replaces the row of (RunID, Slot).
	SaveRenderedMessage(ctx context.Context, m Message) error
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
	// ErrUnsupported is returned by an optional method the platform cannot
	// do here (a status indicator where it has none).
	ErrUnsupported = errors.New("chatops: not supported here")
	// ErrUnavailable is wrapped by errors that say the platform failed to
	// answer for now (an HTTP 5xx, a gateway timeout): the call is retried
	// with backoff, like a network failure.
	ErrUnavailable = errors.New("chatops: platform unavailable")
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

// UnavailableError is a platform's failure to answer a call for now: an
// HTTP 5xx (or 408), with the wait it asked for when it sent Retry-After.
type UnavailableError struct {
	Method string
	// Status is the HTTP status (0 when not known).
	Status int
	// RetryAfter is the platform's Retry-After (0 when it sent none).
	RetryAfter time.Duration
	// Err is the platform library's error.
	Err error
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("%s: platform unavailable (HTTP %d)", e.Method, e.Status)
	if e.RetryAfter > 0 {
		msg += fmt.Sprintf(", retry after %s", e.RetryAfter)
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the platform library's error.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
