// files.go: a thread's attachment for the run's thread tools
// (chatops.ThreadFileOpener): the message read again from its thread
// (conversations.replies), its file's url_private_download fetched with the
// bot token, never sent to another host; and a message's file read whole
// within a limit applied while reading (fetch).

package slack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/slack-go/slack"

	"github.com/threadline-bot/threadline/chatops"
)

// OpenThreadFile opens the file called name of the message msgID in the
// thread at p (chatops.ThreadFileOpener). The message is looked up within
// the thread, so a file of another thread or channel is never reached.
func (s *surface) OpenThreadFile(ctx context.Context, p chatops.Place, msgID, name string) (io.ReadCloser, chatops.FileInfo, error) {
	if p.Thread == "" || msgID == "" {
		return nil, chatops.FileInfo{}, errors.New("no thread")
	}
	msgs, _, _, err := s.replies(ctx, &slack.GetConversationRepliesParameters{ChannelID: p.Channel, Timestamp: p.Thread,
		Oldest: msgID, Latest: msgID, Inclusive: true, Limit: 1})
	if err != nil {
		return nil, chatops.FileInfo{}, err
	}
	for _, m := range msgs {
		if m.Timestamp != msgID {
			continue
		}
		for _, f := range m.Files {
			if firstOf(f.Name, f.Title, f.ID) == name {
				return s.download(ctx, f)
			}
		}
	}
	return nil, chatops.FileInfo{}, fmt.Errorf("%s is no longer in the thread", name)
}

// download GETs f's private download URL with the bot token; a redirect is
// followed only on the same host (the token goes nowhere else).
func (s *surface) download(ctx context.Context, f slack.File) (io.ReadCloser, chatops.FileInfo, error) {
	u := firstOf(f.URLPrivateDownload, f.URLPrivate)
	if u == "" {
		return nil, chatops.FileInfo{}, fmt.Errorf("slack gives no download link for %s", f.Name)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, chatops.FileInfo{}, err
	}
	if req.URL.Scheme != "https" && req.URL.Scheme != "http" {
		return nil, chatops.FileInfo{}, fmt.Errorf("slack's download link for %s is not http(s)", f.Name)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	host := req.URL.Host
	c := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if r.URL.Host != host {
			return fmt.Errorf("slack redirected the download to another host (%s)", r.URL.Host)
		}
		if len(via) >= 5 {
			return errors.New("too many redirects")
		}
		return nil
	}}
	resp, err := c.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, chatops.FileInfo{}, fmt.Errorf("download %s: %w", f.Name, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, chatops.FileInfo{}, fmt.Errorf("download %s: %s", f.Name, resp.Status)
	}
	size := int64(f.Size)
	if resp.ContentLength > 0 {
		size = resp.ContentLength
	}
	return resp.Body, chatops.FileInfo{Size: size, MIMEType: f.Mimetype}, nil
}

// ErrFileTooLarge is returned by fetch for a file over its limit, whatever
// size it declared.
var ErrFileTooLarge = errors.New("slack: file too large")

// fetch reads f's content (download: with the bot token, on Slack's host
// only), at most limit bytes: a file that declares more is refused before
// it is asked for, and one that turns out to be larger is refused as soon
// as limit+1 bytes were read, whatever it declared, so that a file lying
// about its size costs no more memory than the limit.
func (s *surface) fetch(ctx context.Context, f slack.File, limit int64) ([]byte, error) {
	if int64(f.Size) > limit {
		return nil, fmt.Errorf("%w: %s declares %d bytes, over %d", ErrFileTooLarge, f.Name, f.Size, limit)
	}
	rc, info, err := s.download(ctx, f)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if info.Size > limit {
		return nil, fmt.Errorf("%w: %s is served as %d bytes, over %d", ErrFileTooLarge, f.Name, info.Size, limit)
	}
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", f.Name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is more than %d bytes (it declared %d)", ErrFileTooLarge, f.Name, limit, f.Size)
	}
	return data, nil
}

var _ chatops.ThreadFileOpener = (*surface)(nil)
