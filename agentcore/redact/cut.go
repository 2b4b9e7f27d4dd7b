// Cut-aware scrubbing: text cut short with "…" may keep part of a secret
// (the start before the mark, or the end after a leading one), which exact
// matching cannot see.

package redact

import (
	"slices"
	"strings"
)

// CutMark is the mark that shortened text carries where it was cut
// (agent.Truncate, procrun.Excerpt and procrun.StderrTail use it).
const CutMark = "…"

// MinCutLen is the shortest piece of a secret masked next to a CutMark: a
// shorter one is as likely to be ordinary text as a secret's remains.
const MinCutLen = 4

// Cut is String for text that may have been cut short: besides every whole
// secret, it masks, next to each CutMark in s, the text just before the mark
// that is the start of a secret (at least MinCutLen bytes: a head cut off by
// a truncation) and the text just after it that is the end of a secret (a
// tail whose start was cut off). At each mark the longest such piece is
// masked; the mark itself stays. Text without a CutMark gets String.
func (r *Redactor) Cut(s string) string {
	m := r.load()
	if m == nil {
		return s
	}
	if !strings.Contains(s, CutMark) {
		out, _ := m.replace(s, len(s), false)
		return out
	}
	return m.maskSpans(s, m.cutSpans(s))
}

// span is a byte range [a, e) of text to mask.
type span struct{ a, e int }

// cutSpans returns the ranges of s to mask: every whole secret (as replace
// finds them) and the pieces of secrets next to each CutMark, sorted by start.
func (m *matcher) cutSpans(s string) []span {
	var spans []span
	for i := 0; ; {
		a, e, ok := m.find(s, i, len(s))
		if !ok {
			break
		}
		spans = append(spans, span{a, e})
		i = e
	}
	for off := 0; ; {
		k := strings.Index(s[off:], CutMark)
		if k < 0 {
			break
		}
		at := off + k
		if n := m.headBefore(s[:at]); n > 0 {
			spans = append(spans, span{at - n, at})
		}
		after := at + len(CutMark)
		if n := m.tailAfter(s[after:]); n > 0 {
			spans = append(spans, span{after, after + n})
		}
		off = after
	}
	slices.SortFunc(spans, func(x, y span) int { return x.a - y.a })
	return spans
}

// headBefore returns the length of the longest suffix of s (at least
// MinCutLen bytes) that is a proper prefix of a secret, or 0.
func (m *matcher) headBefore(s string) int {
	for n := min(len(s), m.maxLen-1); n >= MinCutLen; n-- {
		frag := s[len(s)-n:]
		for _, sec := range m.byPair[pairKey(frag[0], frag[1])] {
			if len(sec) > n && strings.HasPrefix(sec, frag) {
				return n
			}
		}
	}
	return 0
}

// tailAfter returns the length of the longest prefix of s (at least
// MinCutLen bytes) that is a proper suffix of a secret, or 0.
func (m *matcher) tailAfter(s string) int {
	best := 0
	for _, sec := range m.vals {
		for n := min(len(s), len(sec)-1); n >= MinCutLen && n > best; n-- {
			if strings.HasPrefix(s, sec[len(sec)-n:]) {
				best = n
				break
			}
		}
	}
	return best
}

// maskSpans replaces the union of spans (sorted by start) in s by Mask, one
// Mask per run of overlapping spans.
func (m *matcher) maskSpans(s string, spans []span) string {
	if len(spans) == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	i := 0
	for k := 0; k < len(spans); {
		a, e := spans[k].a, spans[k].e
		for k++; k < len(spans) && spans[k].a < e; k++ {
			e = max(e, spans[k].e)
		}
		b.WriteString(s[i:a])
		b.WriteString(Mask)
		i = e
	}
	b.WriteString(s[i:])
	return b.String()
}
