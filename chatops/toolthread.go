// The thread a run's thread tools post to (agentcore/threadtools).

package chatops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

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

// FileUploader is an optional Surface capability: posts a file with its
// content type and title (an image as the platform shows images), where
// Upload posts a text document.
type FileUploader interface {
	UploadFile(ctx context.Context, p Place, f OutFile) (string, error)
}

// OutFile is a file the bot posts.
type OutFile struct {
	// Name is the file's name; Title, when set, is shown with it.
	Name, Title string
	// MIMEType is the content's type ("image/png"); empty: unknown.
	MIMEType string
	Content  []byte
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
	var err error
	if u, ok := th.raw.(FileUploader); ok {
		_, err = u.UploadFile(ctx, th.place, OutFile{Name: f.Name, Title: f.Title, MIMEType: f.MIMEType, Content: f.Content})
	} else {
		_, err = th.raw.Upload(ctx, th.place, f.Name, string(f.Content))
	}
	if err != nil {
		return threadtools.Posted{}, fmt.Errorf("upload to the thread: %w", err)
	}
	return threadtools.Posted{Where: "the thread (" + th.place.Platform + ")"}, nil
}

// Files lists the files attached to the thread's messages, by name, where
// the platform reads its threads (ThreadReader).
func (th *toolThread) Files(ctx context.Context) ([]threadtools.ThreadFile, error) {
	msgs, err := th.history(ctx)
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

// ThreadFileOpener is an optional Surface capability: the content of the
// file called name attached to the message msgID of the thread at p (an id
// ThreadHistory gave for that thread), with its size and type when the
// platform says them (0 and "" when not).
type ThreadFileOpener interface {
	OpenThreadFile(ctx context.Context, p Place, msgID, name string) (io.ReadCloser, FileInfo, error)
}

// FileInfo is what a platform says of an attachment it opens.
type FileInfo struct {
	Size     int64
	MIMEType string
}

// Fetch opens the thread's attachment called name: of the thread's files
// (Files) with that name, the newest; the agent is told when there were
// several. An unknown name is an error listing the names there are.
func (th *toolThread) Fetch(ctx context.Context, name string) (io.ReadCloser, threadtools.ThreadFile, error) {
	o, ok := th.raw.(ThreadFileOpener)
	if !ok {
		return nil, threadtools.ThreadFile{}, errors.New("fetching a thread's file is not available from this chat platform")
	}
	msgs, err := th.history(ctx)
	if err != nil {
		return nil, threadtools.ThreadFile{}, err
	}
	var (
		at    ThreadMessage
		same  int
		names []string
	)
	for _, m := range msgs {
		for _, n := range m.Files {
			if n == name {
				at, same = m, same+1
			}
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	if same == 0 {
		if len(names) == 0 {
			return nil, threadtools.ThreadFile{}, fmt.Errorf("no file called %q in this thread: it has no files", name)
		}
		return nil, threadtools.ThreadFile{}, fmt.Errorf("no file called %q in this thread; its files: %s", name, strings.Join(names, ", "))
	}
	rc, info, err := o.OpenThreadFile(ctx, th.place, at.ID, name)
	if err != nil {
		return nil, threadtools.ThreadFile{}, err
	}
	tf := threadtools.ThreadFile{Name: name, Size: info.Size, MIMEType: info.MIMEType, From: at.Author, PostedAt: at.Time}
	if same > 1 {
		tf.Note = fmt.Sprintf("%d files in this thread are called %s; this is the newest", same, name)
		if !at.Time.IsZero() {
			tf.Note += ", posted " + at.Time.UTC().Format("2006-01-02 15:04 UTC")
		}
		if at.Author != "" {
			tf.Note += " by " + at.Author
		}
	}
	return rc, tf, nil
}

// history is the thread's messages, oldest first.
func (th *toolThread) history(ctx context.Context) ([]ThreadMessage, error) {
	r, ok := th.desk.reader(th.place.Platform)
	if !ok {
		return nil, errors.New("this platform's threads cannot be read")
	}
	return r.ThreadHistory(ctx, th.place, HistoryQuery{})
}

// Say posts text in the thread (scrubbed, as everything the desk posts).
func (th *toolThread) Say(ctx context.Context, text string) error {
	return th.desk.notice(ctx, th.place, text)
}
