// Package redact scrubs secret values from text before it leaves the process:
// messages posted to chat and log records. It matches by value (the configured
// tokens, passwords and project secrets themselves), not by pattern, so a secret
// is caught whatever its shape and nothing else is touched.
package redact

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

// minLen is the shortest value treated as a secret: shorter ones ("1", "yes")
// would mangle ordinary text and are not secrets worth the name.
const minLen = 6

// Redactor replaces known secret values. It is safe for concurrent use; the zero
// value redacts nothing.
type Redactor struct {
	mu      sync.RWMutex
	secrets map[string]struct{}
	r       *strings.Replacer
}

// New returns a Redactor for the given values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secret values (project secrets loaded at run time).
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]struct{}{}
	}
	changed := false
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < minLen {
			continue
		}
		if _, ok := r.secrets[s]; !ok {
			r.secrets[s] = struct{}{}
			changed = true
		}
	}
	if !changed {
		return
	}
	// Longest first, so that a secret containing another is replaced whole.
	vals := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		vals = append(vals, s)
	}
	slices.SortFunc(vals, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(vals))
	for _, s := range vals {
		pairs = append(pairs, s, Mask)
	}
	r.r = strings.NewReplacer(pairs...)
}

// String returns s with every secret value replaced by Mask.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	r.mu.RLock()
	rep := r.r
	r.mu.RUnlock()
	if rep == nil {
		return s
	}
	return rep.Replace(s)
}

// Handler wraps a slog.Handler so that messages and string attributes are
// redacted before they are written.
func Handler(h slog.Handler, r *Redactor) slog.Handler { return &handler{h: h, r: r} }

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = h.attr(a)
	}
	return &handler{h: h.h.WithAttrs(red), r: h.r}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{h: h.h.WithGroup(name), r: h.r}
}

func (h *handler) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, h.r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.String(err.Error()))
		}
		return slog.String(a.Key, h.r.String(v.String()))
	}
	return a
}
