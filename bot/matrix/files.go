// files.go: a thread's attachment for the run's thread tools
// (chatops.ThreadFileOpener): the event read again in its room, checked to
// be of the thread, its mxc URL downloaded through the homeserver's
// authenticated media API and decrypted when the room's attachment is
// encrypted (its hash checked before the stream ends).

package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/threadline-bot/threadline/chatops"
)

var _ chatops.ThreadFileOpener = (*Bot)(nil)

// OpenThreadFile opens the file called name of the event msgID of the
// thread at p (chatops.ThreadFileOpener): the thread's root or one of its
// m.thread replies, in p's room; no other event is read.
func (b *Bot) OpenThreadFile(ctx context.Context, p chatops.Place, msgID, name string) (io.ReadCloser, chatops.FileInfo, error) {
	room, err := b.room(p)
	if err != nil {
		return nil, chatops.FileInfo{}, err
	}
	e, err := b.fetch(ctx, room, id.EventID(msgID))
	if err != nil {
		return nil, chatops.FileInfo{}, fmt.Errorf("read the message of %s: %w", name, err)
	}
	if perr := e.Content.ParseRaw(e.Type); perr != nil && !errors.Is(perr, event.ErrContentAlreadyParsed) {
		return nil, chatops.FileInfo{}, perr
	}
	c := e.Content.AsMessage()
	if c == nil || !c.MsgType.IsMedia() || c.GetFileName() != name {
		return nil, chatops.FileInfo{}, fmt.Errorf("%s is no longer in the thread", name)
	}
	if root, _ := threadParent(c.RelatesTo); e.ID != id.EventID(p.Thread) && root != id.EventID(p.Thread) {
		return nil, chatops.FileInfo{}, fmt.Errorf("%s is not in this thread", name)
	}
	info := chatops.FileInfo{}
	if c.Info != nil {
		info = chatops.FileInfo{Size: int64(c.Info.Size), MIMEType: c.Info.MimeType}
	}
	mxc := c.URL
	if c.File != nil {
		mxc = c.File.URL
		if err := c.File.PrepareForDecryption(); err != nil {
			return nil, chatops.FileInfo{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	uri, err := mxc.Parse()
	if err != nil {
		return nil, chatops.FileInfo{}, fmt.Errorf("%s has no valid mxc URL: %w", name, err)
	}
	resp, err := b.cli.Download(ctx, uri)
	if err != nil {
		return nil, chatops.FileInfo{}, fmt.Errorf("download %s: %w", name, err)
	}
	if c.File == nil {
		if info.Size == 0 && resp.ContentLength > 0 {
			info.Size = resp.ContentLength
		}
		return resp.Body, info, nil
	}
	return &decrypting{r: c.File.DecryptStream(resp.Body), body: resp.Body}, info, nil
}

// decrypting reads a decrypted attachment; the end of the stream is
// reported only when its hash matched (else the read fails).
type decrypting struct {
	r    io.ReadSeekCloser
	body io.Closer
	done bool
}

func (d *decrypting) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if errors.Is(err, io.EOF) && !d.done {
		d.done = true
		if cerr := d.r.Close(); cerr != nil {
			return n, fmt.Errorf("the attachment does not match its hash: %w", cerr)
		}
	}
	return n, err
}

func (d *decrypting) Close() error {
	if !d.done {
		d.done = true
		_ = d.r.Close()
	}
	return d.body.Close()
}
