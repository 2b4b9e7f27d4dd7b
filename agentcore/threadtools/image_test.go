package threadtools

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/threadline-bot/threadline/agentcore/agent"
)

// TestPostImage: an image the agent made is posted under a name of its
// real type (whatever the CLI declared), once for the same bytes; bytes
// that are no image and an image over the limit are refused, said to
// OnRefused, and nothing is posted for them.
func TestPostImage(t *testing.T) {
	h := start(t, func(c *Config) { c.MaxBytes = 4 << 10 })
	img := pngBytes(t)
	sent, err := h.srv.PostImage(t.Context(), &agent.MadeImage{ToolID: "ig_1", MediaType: "image/jpeg", Data: img, Size: len(img)})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Name != "image-1.png" || sent.MIMEType != "image/png" || sent.SHA256 != sha(img) {
		t.Errorf("sent %+v", sent)
	}
	// The same bytes again (the CLI reports an item twice): not posted.
	if _, err := h.srv.PostImage(t.Context(), &agent.MadeImage{Data: img}); err != nil {
		t.Fatal(err)
	}
	// A name from the CLI keeps its stem, gets its type's extension.
	other := append(bytes.Clone(img), 0) // trailing byte: other bytes, still a PNG
	if sent, err := h.srv.PostImage(t.Context(), &agent.MadeImage{Name: "chart\u202e.gpj", Data: other}); err != nil || sent.Name != "chart_.gpj.png" {
		t.Errorf("named image: %+v, %v", sent, err)
	}
	if _, err := h.srv.PostImage(t.Context(), &agent.MadeImage{MediaType: "image/png", Data: []byte("#!/bin/sh\nrm -rf ~\n")}); err == nil || !strings.Contains(err.Error(), "not a PNG") {
		t.Errorf("a script as an image: %v", err)
	}
	big := append(bytes.Clone(img), make([]byte, 5<<10)...)
	if _, err := h.srv.PostImage(t.Context(), &agent.MadeImage{Data: big}); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("an image over the limit: %v", err)
	}
	got := h.thread.Sent()
	if len(got) != 2 || !bytes.Equal(got[0].Content, img) || got[1].Name != "chart_.gpj.png" {
		t.Errorf("the thread got %d files: %+v", len(got), got)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.refused) != 2 || len(h.sentCalls) != 2 {
		t.Errorf("refused %q, sent %+v", h.refused, h.sentCalls)
	}
}

// stuckThread is a Thread whose posts wait until their context ends.
type stuckThread struct{ fakeThread }

func (s *stuckThread) SendFile(ctx context.Context, _ File) (Posted, error) {
	<-ctx.Done()
	return Posted{}, ctx.Err()
}

// TestRequestTimeout: a post the platform never finishes ends at the
// request's timeout with an error saying so; the server still answers.
func TestRequestTimeout(t *testing.T) {
	h := start(t, func(c *Config) {
		c.Thread = &stuckThread{fakeThread{attachments: map[string][]byte{}}}
		c.Timeout = 50 * time.Millisecond
	})
	h.write(t, "a.txt", []byte("hello\n"))
	_, err := h.client.SendFile(t.Context(), "a.txt", "")
	if err == nil || !strings.Contains(err.Error(), "gave up after 50ms") {
		t.Fatalf("send_file to a stuck thread: %v", err)
	}
	if _, err := h.client.Files(t.Context()); err != nil {
		t.Errorf("the server after a timeout: %v", err)
	}
}
