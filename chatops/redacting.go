// Outbound redaction: every text a front-end posts passes through here.

package chatops

import (
	"context"
	"errors"
	"sync"

	"github.com/threadline-bot/threadline/chatops/outbox"
	"github.com/threadline-bot/threadline/chatops/render"
)

// Redactor scrubs secret values from text (agentcore/redact.Redactor).
type Redactor interface {
	// String returns s with every secret replaced.
	String(s string) string
	// Release scrubs a stream's pending text: out can be shown now, held
	// (raw) could still begin a secret and waits for the stream's next piece.
	Release(text string) (out, held string)
}

// redactSurface wraps s so that every text it posts is scrubbed by r first,
// keeping s's optional native streaming.
func redactSurface(s Surface, r Redactor) Surface {
	base := redacting{s: s, r: r}
	if st, ok := s.(Streamer); ok {
		return &redactingStreamer{redacting: base, st: st, held: map[streamID]string{}}
	}
	return &base
}

type redacting struct {
	s Surface
	r Redactor
}

func (x *redacting) view(v View) View {
	v.Status, v.Body, v.Footer, v.Fallback = x.r.String(v.Status), x.r.String(v.Body), x.r.String(v.Footer), x.r.String(v.Fallback)
	if len(v.Steps) > 0 {
		steps := make([]string, len(v.Steps))
		for i, s := range v.Steps {
			steps[i] = x.r.String(s)
		}
		v.Steps = steps
	}
	if len(v.Tasks) > 0 {
		tasks := make([]render.Step, len(v.Tasks))
		for i, t := range v.Tasks {
			t.Title, t.Output = x.r.String(t.Title), x.r.String(t.Output)
			tasks[i] = t
		}
		v.Tasks = tasks
	}
	if v.Plan != nil {
		p := render.Plan{Title: x.r.String(v.Plan.Title)}
		for _, it := range v.Plan.Items {
			p.Items = append(p.Items, render.PlanItem{Text: x.r.String(it.Text), Status: it.Status})
		}
		v.Plan = &p
	}
	v.Activity = x.r.String(v.Activity)
	return v
}

func (x *redacting) Post(ctx context.Context, p Place, v View) (string, error) {
	return x.s.Post(ctx, p, x.view(v))
}

func (x *redacting) Update(ctx context.Context, p Place, id string, v View) error {
	return x.s.Update(ctx, p, id, x.view(v))
}

func (x *redacting) Upload(ctx context.Context, p Place, filename, content string) (string, error) {
	return x.s.Upload(ctx, p, x.r.String(filename), x.r.String(content))
}

func (x *redacting) React(ctx context.Context, p Place, id, name string) error {
	return x.s.React(ctx, p, id, name)
}

func (x *redacting) Ephemeral(ctx context.Context, p Place, u User, text string) error {
	return x.s.Ephemeral(ctx, p, u, x.r.String(text))
}

func (x *redacting) Mention(qualified string) string { return x.s.Mention(qualified) }

// redactingStreamer scrubs a natively streamed message as one text: the tail
// of what was sent that could be the start of a secret is held back until the
// next piece (or the stop) shows what it is, so a secret split across two
// appends never reaches the platform, and text without one arrives byte-exact.
type redactingStreamer struct {
	redacting
	st Streamer

	mu   sync.Mutex
	held map[streamID]string // raw text not yet sent, by stream
}

type streamID struct {
	p  Place
	id string
}

func (x *redactingStreamer) take(k streamID) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	h := x.held[k]
	delete(x.held, k)
	return h
}

func (x *redactingStreamer) hold(k streamID, text string) {
	if text == "" {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.held[k] = text
}

// chunks scrubs a stream's chunks: text through the held text (see
// AppendStream), task cards and plans whole. The text held before a task
// card goes out ahead of it (a secret does not run on across a tool call:
// the text after one is a new paragraph); with final everything held goes.
func (x *redactingStreamer) chunks(held string, cs []outbox.Chunk, final bool) ([]outbox.Chunk, string) {
	var out []outbox.Chunk
	flush := func() {
		if held != "" {
			out = append(out, outbox.Chunk{Markdown: x.r.String(held)})
			held = ""
		}
	}
	for _, c := range cs {
		switch {
		case c.Task != nil:
			flush()
			t := *c.Task
			t.Title, t.Output = x.r.String(t.Title), x.r.String(t.Output)
			out = append(out, outbox.Chunk{Task: &t})
		case c.Plan != nil:
			flush()
			p := render.Plan{Title: x.r.String(c.Plan.Title)}
			for _, it := range c.Plan.Items {
				p.Items = append(p.Items, render.PlanItem{Text: x.r.String(it.Text), Status: it.Status})
			}
			out = append(out, outbox.Chunk{Plan: &p})
		default:
			o, h := x.r.Release(held + c.Markdown)
			if o != "" {
				out = append(out, outbox.Chunk{Markdown: o})
			}
			held = h
		}
	}
	if final {
		flush()
	}
	return out, held
}

func (x *redactingStreamer) StartStream(ctx context.Context, p Place, cs []outbox.Chunk) (string, error) {
	out, held := x.chunks("", cs, false)
	id, err := x.st.StartStream(ctx, p, out)
	if err == nil {
		x.hold(streamID{p, id}, held)
	}
	return id, err
}

// AppendStream sends what can be shown of the held text and the chunks, and
// holds the rest. A failed call leaves the held text as it was: the caller
// sends the same chunks again.
func (x *redactingStreamer) AppendStream(ctx context.Context, p Place, id string, cs []outbox.Chunk) error {
	k := streamID{p, id}
	before := x.take(k)
	out, held := x.chunks(before, cs, false)
	var err error
	if len(out) > 0 {
		err = x.st.AppendStream(ctx, p, id, out)
	}
	switch {
	case err == nil:
		x.hold(k, held)
	case errors.Is(err, ErrNotStreaming) || errors.Is(err, ErrMessageGone):
		// The caller shows the whole message another way (an update).
	default:
		x.hold(k, before)
	}
	return err
}

// StopStream sends the held text and the last chunks, scrubbed, with the stop.
func (x *redactingStreamer) StopStream(ctx context.Context, p Place, id string, cs []outbox.Chunk, v View) error {
	k := streamID{p, id}
	before := x.take(k)
	out, _ := x.chunks(before, cs, true)
	err := x.st.StopStream(ctx, p, id, out, x.view(v))
	if err != nil && !errors.Is(err, ErrNotStreaming) && !errors.Is(err, ErrMessageGone) {
		x.hold(k, before)
	}
	return err
}

// SetStatus scrubs a status indicator's text (outbox.StatusSetter).
func (x *redactingStreamer) SetStatus(ctx context.Context, p Place, status string) error {
	ss, ok := x.st.(outbox.StatusSetter)
	if !ok {
		return outbox.ErrUnsupported
	}
	return ss.SetStatus(ctx, p, x.r.String(status))
}

// Delete deletes a message (outbox.Deleter).
func (x *redactingStreamer) Delete(ctx context.Context, p Place, id string) error {
	d, ok := x.st.(outbox.Deleter)
	if !ok {
		return outbox.ErrUnsupported
	}
	return d.Delete(ctx, p, id)
}
