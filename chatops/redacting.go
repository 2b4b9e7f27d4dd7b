// Outbound redaction: every text a front-end posts passes through here.

package chatops

import "context"

// Redactor scrubs secret values from text (chatops/redact.Redactor).
type Redactor interface {
	String(s string) string
}

// redactSurface wraps s so that every text it posts is scrubbed by r first,
// keeping s's optional native streaming.
func redactSurface(s Surface, r Redactor) Surface {
	base := redacting{s: s, r: r}
	if st, ok := s.(Streamer); ok {
		return &redactingStreamer{redacting: base, st: st}
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

type redactingStreamer struct {
	redacting
	st Streamer
}

func (x *redactingStreamer) StartStream(ctx context.Context, p Place, v View) (string, error) {
	return x.st.StartStream(ctx, p, x.view(v))
}

// AppendStream scrubs each chunk; a secret split across two chunks is caught by
// the final update, which carries the whole body.
func (x *redactingStreamer) AppendStream(ctx context.Context, p Place, id, markdown string) error {
	return x.st.AppendStream(ctx, p, id, x.r.String(markdown))
}

func (x *redactingStreamer) StopStream(ctx context.Context, p Place, id, rest string, v View) error {
	return x.st.StopStream(ctx, p, id, x.r.String(rest), x.view(v))
}
