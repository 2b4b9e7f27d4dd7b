// Images the agent made through its CLI's own tools (agent.EventImage),
// posted to the thread without a tool call.

package threadtools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/threadline-bot/threadline/agentcore/agent"
	"github.com/threadline-bot/threadline/agentcore/logkey"
	"github.com/threadline-bot/threadline/agentcore/shipgate"
)

// imageTypes are the image types posted, by the type their bytes sniff as,
// with the extension a name gets.
var imageTypes = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/gif":  ".gif",
	"image/webp": ".webp",
}

// PostImage posts img, an image the agent made, to the thread under the
// rules of send_file that apply to bytes: its content must sniff as a PNG,
// JPEG, GIF or WebP image (whatever type the CLI declared) of at most
// MaxBytes. An image the run already posted (the same bytes) is not posted
// again. A refusal is said in the thread and reported to OnRefused; a
// post to OnSent. It is safe to call with the server's tool calls.
func (s *Server) PostImage(ctx context.Context, img *agent.MadeImage) (Sent, error) {
	if img == nil || len(img.Data) == 0 {
		return Sent{}, nil
	}
	sniffed := http.DetectContentType(img.Data)
	ext, ok := imageTypes[sniffed]
	name := s.imageName(img.Name, ext)
	if !ok {
		return Sent{}, s.refused(name, fmt.Sprintf("the agent's image is %s, not a PNG, JPEG, GIF or WebP image", sniffed))
	}
	if int64(len(img.Data)) > s.cfg.MaxBytes {
		return Sent{}, s.refused(name, fmt.Sprintf("the agent's image is %s, over the %s limit",
			shipgate.HumanSize(int64(len(img.Data))), shipgate.HumanSize(s.cfg.MaxBytes)))
	}
	sum := sha256.Sum256(img.Data)
	digest := hex.EncodeToString(sum[:])
	if !s.firstPost(digest) {
		s.log.Debug("thread tools: image posted already", logkey.File, name, logkey.Size, len(img.Data))
		return Sent{}, nil
	}
	sent, err := s.post(ctx, File{Name: name, Content: img.Data, Size: int64(len(img.Data)), SHA256: digest, MIMEType: sniffed})
	if err != nil {
		s.forget(digest) // a later report of the same image may post it
	}
	return sent, err
}

// imageName is the name an image is posted under: the CLI's (cleaned, with
// the extension of its real type) or image-N.
func (s *Server) imageName(given, ext string) string {
	if ext == "" {
		ext = ".bin"
	}
	s.mu.Lock()
	s.images++
	n := s.images
	s.mu.Unlock()
	name := fmt.Sprintf("image-%d", n)
	if strings.TrimSpace(given) != "" {
		name = CleanName(given)
	}
	if !strings.HasSuffix(strings.ToLower(name), ext) {
		name += ext
	}
	return name
}

// refused reports a refusal of the file called name (the log, OnRefused)
// and returns it as the error.
func (s *Server) refused(name, reason string) error {
	s.log.Info("thread tools: file refused", logkey.File, name, logkey.Err, reason)
	if s.cfg.OnRefused != nil {
		s.cfg.OnRefused(name, reason)
	}
	return refuse("%s", reason)
}

// firstPost records digest as posted by this run; false when it was
// already.
func (s *Server) firstPost(digest string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.posted == nil {
		s.posted = map[string]bool{}
	}
	if s.posted[digest] {
		return false
	}
	s.posted[digest] = true
	return true
}

// forget undoes firstPost after a failed post.
func (s *Server) forget(digest string) {
	s.mu.Lock()
	delete(s.posted, digest)
	s.mu.Unlock()
}
