// The thread a run's thread tools post to (agentcore/threadtools).

package chatops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/threadtools"
)

// ToolThread returns the thread chatID is bound to on a platform attached
// to this desk, as the chat's run's thread tools reach it (send_file
// uploads there, a refusal is said there); ok is false when the chat has
// no such thread. With several, the latest bound is used.
func (t *Desk) ToolThread(ctx context.Context, chatID agent.ChatID) (threadtools.ChatThread, bool) {
	bs, err := t.store.BindingsOfChat(ctx, chatID)
	if err != nil {
		t.log.Warn("thread tools: the chat's threads", logkey.ChatID, string(chatID), logkey.Err, err)
		return nil, false
	}
	for _, b := range slices.Backward(bs) {
		t.mu.Lock()
		raw := t.raw[b.Platform]
		t.mu.Unlock()
		if raw != nil {
			return &toolThread{desk: t, place: b.Place, raw: raw}, true
		}
	}
	return nil, false
}

// toolThread is a chat's thread for its run's tools.
type toolThread struct {
	desk  *Desk
	place Place
	raw   Surface
}

// SendFile uploads f into the thread as it is: the thread tools refused
// it already if it held a configured secret.
func (th *toolThread) SendFile(ctx context.Context, f threadtools.File) (threadtools.Posted, error) {
	if _, err := th.raw.Upload(ctx, th.place, f.Name, string(f.Content)); err != nil {
		return threadtools.Posted{}, fmt.Errorf("upload to the thread: %w", err)
	}
	return threadtools.Posted{Where: "the thread (" + th.place.Platform + ")"}, nil
}

// Files lists the files attached to the thread's messages, by name, where
// the platform reads its threads (ThreadReader).
func (th *toolThread) Files(ctx context.Context) ([]threadtools.ThreadFile, error) {
	th.desk.mu.Lock()
	r := th.desk.readers[th.place.Platform]
	th.desk.mu.Unlock()
	if r == nil {
		return nil, errors.New("this platform's threads cannot be read")
	}
	msgs, err := r.ThreadHistory(ctx, th.place, HistoryQuery{})
	if err != nil {
		return nil, err
	}
	var out []threadtools.ThreadFile
	for _, m := range msgs {
		for _, name := range m.Files {
			out = append(out, threadtools.ThreadFile{Name: name, From: m.Author, PostedAt: m.Time})
		}
	}
	return out, nil
}

// errNoFetch: no front-end downloads a thread's attachment for the tools
// yet (issue 27 item 2).
var errNoFetch = errors.New("fetching a thread's file is not available from this chat platform yet")

// Fetch is not available yet: it says so to the agent.
func (th *toolThread) Fetch(context.Context, string) (io.ReadCloser, threadtools.ThreadFile, error) {
	return nil, threadtools.ThreadFile{}, errNoFetch
}

// Say posts text in the thread (scrubbed, as everything the desk posts).
func (th *toolThread) Say(ctx context.Context, text string) error {
	return th.desk.notice(ctx, th.place, text)
}
