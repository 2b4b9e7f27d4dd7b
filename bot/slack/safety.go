// safety.go: the safety net of the work the Slack front-end runs itself
// (Socket Mode events, answer modals, notes): a panic is logged with its
// stack and the person is told. Thread events are handed to the chatops desk,
// whose thread actors keep their order and have a safety net of their own.

package slack

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/chatops"
)

// jobTimeout bounds one piece of background work.
const jobTimeout = 5 * time.Minute

// who is the person and thread an inbound request came from: the one told
// when its handling fails.
type who struct {
	place chatops.Place
	user  chatops.User
}

// goSafely runs f in its own goroutine under the safety net.
func (b *Bot) goSafely(what string, w who, f func(ctx context.Context)) {
	b.wg.Go(func() {
		ctx, cancel := context.WithTimeout(b.base, jobTimeout)
		defer cancel()
		defer b.rescue(ctx, what, func() who { return w })
		f(ctx)
	})
}

// failureNote is what the person hears when handling their request panicked
// (the desk's note).
const failureNote = chatops.FailureNote

// rescue must be deferred directly: it turns a panic into an error log line
// with the stack (key "stack") and an ephemeral note to the person, found by
// whom (which may be nil, or panic itself).
func (b *Bot) rescue(ctx context.Context, what string, whom func() who) {
	if r := recover(); r != nil {
		b.panicked(ctx, what, r, whom)
	}
}

// panicked logs a recovered panic r with the stack and tells the person.
func (b *Bot) panicked(ctx context.Context, what string, r any, whom func() who) {
	b.panics.Add(1)
	b.log.ErrorContext(ctx, "slack handler panicked", "what", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	if whom == nil {
		return
	}
	var w who
	func() {
		defer func() {
			if r := recover(); r != nil {
				b.log.ErrorContext(ctx, "finding whom to tell about a panic panicked", "what", what, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		w = whom()
	}()
	b.tellFailure(w)
}

// tellFailure shows failureNote to the person, in their thread, without
// holding up the caller.
func (b *Bot) tellFailure(w who) {
	if w.user.ID == "" || w.place.Channel == "" {
		return
	}
	b.wg.Go(func() {
		ctx, cancel := context.WithTimeout(b.base, 30*time.Second)
		defer cancel()
		defer func() {
			if r := recover(); r != nil {
				b.log.ErrorContext(ctx, "telling a user about a failure panicked", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			}
		}()
		if err := b.surface.Ephemeral(ctx, w.place, w.user, failureNote); err != nil {
			b.log.WarnContext(ctx, "tell a user their request failed", logkey.Channel, w.place.Channel, logkey.User, w.user.ID, "err", err)
		}
	})
}

// Panics counts the handler panics the bot survived.
func (b *Bot) Panics() int64 { return b.panics.Load() }
