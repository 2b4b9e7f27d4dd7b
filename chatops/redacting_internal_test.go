package chatops

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/threadline-bot/threadline/agentcore/redact"
	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// recStreamer records what a natively streaming platform receives.
type recStreamer struct {
	mu    sync.Mutex
	calls []string // every text sent, in order
	text  string   // the streamed message as the platform shows it
	fail  error    // returned (once) by the next AppendStream
}

func (r *recStreamer) Post(context.Context, Place, View) (string, error)             { return "p", nil }
func (r *recStreamer) Update(context.Context, Place, string, View) error             { return nil }
func (r *recStreamer) Upload(context.Context, Place, string, string) (string, error) { return "", nil }
func (r *recStreamer) React(context.Context, Place, string, string) error            { return nil }
func (r *recStreamer) Ephemeral(context.Context, Place, User, string) error          { return nil }
func (r *recStreamer) Mention(q string) string                                       { return q }

// md is markdown as stream chunks.
func md(s string) []outbox.Chunk {
	if s == "" {
		return nil
	}
	return []outbox.Chunk{{Markdown: s}}
}

// text joins the chunks' markdown; a task card shows as [title|output].
func text(cs []outbox.Chunk) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Task != nil {
			b.WriteString("[" + c.Task.Title + "|" + c.Task.Output + "]")
		}
		b.WriteString(c.Markdown)
	}
	return b.String()
}

func (r *recStreamer) StartStream(_ context.Context, _ Place, cs []outbox.Chunk) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, text(cs))
	r.text = text(cs)
	return "m1", nil
}

func (r *recStreamer) AppendStream(_ context.Context, _ Place, _ string, cs []outbox.Chunk) error {
	md := text(cs)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.fail; err != nil {
		r.fail = nil
		return err
	}
	r.calls = append(r.calls, md)
	r.text += md
	return nil
}

func (r *recStreamer) StopStream(_ context.Context, _ Place, _ string, cs []outbox.Chunk, v View) error {
	rest := text(cs)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, rest+"|"+v.Footer)
	r.text += rest
	return nil
}

// TestRedactingStreamerSplitSecret: a secret cut across the start, appends
// and the stop never reaches the platform, whole or in parts, and the
// streamed message reads as the original with the secret masked.
func TestRedactingStreamerSplitSecret(t *testing.T) {
	const secret = "xoxb-SPLIT-secret-4242"
	ctx := context.Background()
	p := Place{Platform: "slack", Channel: "C1", Thread: "1.0"}
	for _, pieces := range [][]string{
		{"the token is xox", "b-SPLIT-sec", "ret-4242 and more", " text"},
		{"the token is xoxb-SPLIT-secret-4", "242", "", " end"},
		{"no secret here, x", "o", "x", "o."},
	} {
		rec := &recStreamer{}
		s := redactSurface(rec, redact.New(secret)).(Streamer)
		id, err := s.StartStream(ctx, p, md(pieces[0]))
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range pieces[1 : len(pieces)-1] {
			if piece == "" {
				continue // the outbox sends no empty append
			}
			if err := s.AppendStream(ctx, p, id, md(piece)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.StopStream(ctx, p, id, md(pieces[len(pieces)-1]), View{Footer: "Done"}); err != nil {
			t.Fatal(err)
		}
		whole := strings.Join(pieces, "")
		if want := strings.ReplaceAll(whole, secret, redact.Mask); rec.text != want {
			t.Errorf("%q: streamed %q, want %q", pieces, rec.text, want)
		}
		sent := strings.Join(rec.calls, "")
		for _, part := range []string{secret, "xoxb-SPLIT", "SPLIT-sec", "ret-4242"} {
			if strings.Contains(sent, part) {
				t.Errorf("%q: the platform got %q in %q", pieces, part, rec.calls)
			}
		}
	}
}

// TestRedactingStreamerRetry: an append that fails leaves the held text as it
// was, so the caller's retry of the same markdown streams it once.
func TestRedactingStreamerRetry(t *testing.T) {
	ctx := context.Background()
	p := Place{Platform: "slack", Channel: "C1", Thread: "1.0"}
	rec := &recStreamer{}
	s := redactSurface(rec, redact.New("zzsecret-99")).(Streamer)
	id, _ := s.StartStream(ctx, p, md("a zz"))
	rec.fail = &RateLimitError{Method: "chat.appendStream"}
	if err := s.AppendStream(ctx, p, id, md("top zz")); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("err %v", err)
	}
	if err := s.AppendStream(ctx, p, id, md("top zz")); err != nil {
		t.Fatal(err)
	}
	if err := s.StopStream(ctx, p, id, md("secret-99!"), View{}); err != nil {
		t.Fatal(err)
	}
	if want := "a zztop " + redact.Mask + "!"; rec.text != want {
		t.Errorf("streamed %q, want %q", rec.text, want)
	}
}

// TestRedactingStreamerTasks: task cards are scrubbed whole, and text held
// before a card goes out ahead of it (scrubbed), so the order holds.
func TestRedactingStreamerTasks(t *testing.T) {
	const secret = "xoxb-TASK-secret-77"
	ctx := context.Background()
	p := Place{Platform: "slack", Channel: "C1", Thread: "1.0"}
	rec := &recStreamer{}
	s := redactSurface(rec, redact.New(secret)).(Streamer)
	id, _ := s.StartStream(ctx, p, nil)
	task := render.Step{ID: "t1", Title: "Bash: echo " + secret, Output: secret + "\n", Status: render.StatusDone}
	if err := s.AppendStream(ctx, p, id, []outbox.Chunk{{Markdown: "I'll run xo"}, {Task: &task}, {Markdown: "\n\nDone."}}); err != nil {
		t.Fatal(err)
	}
	if err := s.StopStream(ctx, p, id, nil, View{}); err != nil {
		t.Fatal(err)
	}
	want := "I'll run xo[Bash: echo " + redact.Mask + "|" + redact.Mask + "\n]\n\nDone."
	if rec.text != want || strings.Contains(strings.Join(rec.calls, ""), secret) {
		t.Errorf("streamed %q, want %q", rec.text, want)
	}
}
