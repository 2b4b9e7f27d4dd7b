// Package redact scrubs secret values from text before it is persisted or
// leaves the process: agent events, messages posted to chat and log records. It
// matches by value (the configured tokens, passwords and project secrets
// themselves), not by pattern, so a secret is caught whatever its shape and
// nothing else is touched.
//
// Text that arrives in pieces (streamed deltas) goes through Release, which
// holds back the tail that could still become a secret, so that a secret split
// across two pieces is caught too.
package redact

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// Mask replaces a secret value.
const Mask = "[redacted]"

// MinLen is the shortest value treated as a secret: shorter ones ("1", "yes")
// would mangle ordinary text and are not secrets worth the name.
const MinLen = 6

// Redactor replaces known secret values. It is safe for concurrent use, and
// values added later apply to every call after Add returns; the zero value (and
// a nil *Redactor) redacts nothing.
type Redactor struct {
	mu      sync.Mutex // serializes Add
	secrets map[string]struct{}
	m       atomic.Pointer[matcher]
}

// New returns a Redactor for the given values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add registers more secret values (project secrets loaded at run time).
// Surrounding space is trimmed; values shorter than MinLen are ignored.
func (r *Redactor) Add(secrets ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.secrets == nil {
		r.secrets = map[string]struct{}{}
	}
	changed := false
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) < MinLen {
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
	vals := make([]string, 0, len(r.secrets))
	for s := range r.secrets {
		vals = append(vals, s)
	}
	m := newMatcher(vals)
	m.json = newMatcher(append(vals, jsonForms(vals)...))
	r.m.Store(m)
}

func (r *Redactor) load() *matcher {
	if r == nil {
		return nil
	}
	return r.m.Load()
}

// String returns s with every secret value replaced by Mask. At a position
// where several secrets match, the longest is replaced. Text without a secret
// is returned as is, without copying.
func (r *Redactor) String(s string) string {
	m := r.load()
	if m == nil {
		return s
	}
	out, _ := m.replace(s, len(s), false)
	return out
}

// Release scrubs the text of a stream received so far and not yet released:
// out is the part that can be shown now, with secrets replaced by Mask; held is
// the raw tail that could still be the start of a secret (at most the longest
// secret's length less one byte), to be prefixed to the stream's next piece and
// released again, or passed to String when the stream ends. Concatenating every
// out and the final String(held) gives String of the whole text.
func (r *Redactor) Release(text string) (out, held string) {
	m := r.load()
	if m == nil {
		return text, ""
	}
	return m.replace(text, m.holdFrom(text), true)
}

// Stream scrubs one stream of text arriving in pieces. It is not safe for
// concurrent use; the Redactor behind it may gain secrets meanwhile.
type Stream struct {
	r       *Redactor
	pending string
}

// Stream returns a new stream scrubber.
func (r *Redactor) Stream() *Stream { return &Stream{r: r} }

// Write adds a piece of the stream and returns the scrubbed text that can be
// released now (possibly empty while a possible secret is held back).
func (s *Stream) Write(piece string) string {
	out, held := s.r.Release(s.pending + piece)
	s.pending = held
	return out
}

// Pending reports whether text is held back.
func (s *Stream) Pending() bool { return s.pending != "" }

// Flush ends the stream: it returns the held-back text, scrubbed.
func (s *Stream) Flush() string {
	out := s.r.String(s.pending)
	s.pending = ""
	return out
}

// matcher finds secrets in text. It is immutable once built.
type matcher struct {
	first  [256]bool
	pair   [1 << 16 / 64]uint64 // bit per first-two-bytes of a secret
	byPair map[uint16][]string  // secrets by their first two bytes, longest first
	vals   []string             // the secrets, longest first
	minLen int
	maxLen int
	// json matches the secrets and their JSON-escaped forms, to tell cheaply
	// whether raw JSON may hold one (json.go).
	json *matcher
}

func newMatcher(vals []string) *matcher {
	vals = slices.Clone(vals)
	// Longest first, so that a secret containing another is replaced whole.
	slices.SortFunc(vals, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	vals = slices.Compact(vals)
	m := &matcher{vals: vals, byPair: map[uint16][]string{}, minLen: len(vals[len(vals)-1]), maxLen: len(vals[0])}
	for _, s := range vals {
		k := pairKey(s[0], s[1])
		m.first[s[0]] = true
		m.pair[k>>6] |= 1 << (k & 63)
		m.byPair[k] = append(m.byPair[k], s)
	}
	return m
}

func pairKey(a, b byte) uint16 { return uint16(a)<<8 | uint16(b) }

func (m *matcher) hasPair(a, b byte) bool {
	k := pairKey(a, b)
	return m.pair[k>>6]&(1<<(k&63)) != 0
}

// find returns the first secret occurrence starting at or after from and
// before limit, the longest where several start at the same place.
func (m *matcher) find(s string, from, limit int) (start, end int, ok bool) {
	last := min(limit, len(s)-m.minLen+1)
	for i := from; i < last; i++ {
		if !m.first[s[i]] || !m.hasPair(s[i], s[i+1]) {
			continue
		}
		for _, sec := range m.byPair[pairKey(s[i], s[i+1])] {
			if strings.HasPrefix(s[i:], sec) {
				return i, i + len(sec), true
			}
		}
	}
	return 0, 0, false
}

// holdFrom returns the earliest position whose tail s[j:] is a proper prefix of
// a secret (the text there is undecided until more arrives), or len(s).
func (m *matcher) holdFrom(s string) int {
	for j := max(0, len(s)-m.maxLen+1); j < len(s); j++ {
		if !m.first[s[j]] {
			continue
		}
		if j == len(s)-1 {
			return j // one byte that starts a secret (every secret is longer)
		}
		if !m.hasPair(s[j], s[j+1]) {
			continue
		}
		tail := s[j:]
		for _, sec := range m.byPair[pairKey(s[j], s[j+1])] {
			if len(sec) > len(tail) && strings.HasPrefix(sec, tail) {
				return j
			}
		}
	}
	return len(s)
}

// replace masks the secrets of s that start before h. With stream set it
// returns the text up to h (or past it, when a secret starting before h ends
// after it) and the rest as held; otherwise the whole of s.
func (m *matcher) replace(s string, h int, stream bool) (out, held string) {
	var b strings.Builder
	i := 0
	for {
		a, e, ok := m.find(s, i, h)
		if !ok {
			break
		}
		if b.Len() == 0 {
			b.Grow(len(s))
		}
		b.WriteString(s[i:a])
		b.WriteString(Mask)
		i = e
	}
	cut := len(s)
	if stream {
		cut = max(i, h)
	}
	if i == 0 {
		return s[:cut], s[cut:]
	}
	if i < cut {
		b.WriteString(s[i:cut])
	}
	return b.String(), s[cut:]
}

// Handler wraps a slog.Handler so that messages and string attributes are
// redacted before they are written, with Cut: a logged excerpt or stderr tail
// cut short keeps no piece of a secret next to its CutMark.
func Handler(h slog.Handler, r *Redactor) slog.Handler { return &handler{h: h, r: r} }

type handler struct {
	h slog.Handler
	r *Redactor
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.Cut(rec.Message), rec.PC)
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
		return slog.String(a.Key, h.r.Cut(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = h.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		if err, ok := v.Any().(error); ok {
			return slog.String(a.Key, h.r.Cut(err.Error()))
		}
		return slog.String(a.Key, h.r.Cut(v.String()))
	}
	return a
}
